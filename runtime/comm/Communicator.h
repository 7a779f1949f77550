//===- Communicator.h - collectives and point-to-point over a rank group --===//
//
// What programs need from a distributed engine. Buffers are device memory of
// the communicator's device; counts are elements. allGather and reduceScatter
// work on rank-major blocks (block r belongs to rank r), as MPI and NCCL do.
// Backends: MPI (CPU; here), NCCL (GPU; bootstrapped over MPI).
//
// Every operation also has a non-blocking form (start*, then wait or test).
// Communicators come from a factory by backend name (CommunicatorFactory.h).
//
// Every MPI wait has a deadline (the collective watchdog, Watchdog.h): a
// collective or receive that does not complete in time returns an error that
// names the ranks of the group that never arrived. After such an error the
// operation is still pending in MPI: the rank must abort (as workerMain does).
//
//===----------------------------------------------------------------------===//
#pragma once
#include "compiler/ir/DType.h"
#include "runtime/core/Device.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Error.h"
#include <cstdint>
#include <memory>
#include <vector>

namespace partita::rt {

/// What one rank's collectives moved, in bytes it sent by the ring
/// algorithms' cost (the model NCCL's and MPI's large-message collectives
/// follow): an all-reduce 2(n-1)/n of its buffer, an all-gather and a
/// reduce-scatter (n-1)/n of the whole (the gathered result, the scattered
/// operand), a broadcast or send its message.
struct CommTraffic {
  double allReduce = 0, allGather = 0, reduceScatter = 0, other = 0;
  int64_t calls = 0;
  double total() const { return allReduce + allGather + reduceScatter + other; }
};

class Communicator {
public:
  virtual ~Communicator() = default;
  /// Everything this rank's operations on this communicator moved so far.
  const CommTraffic &traffic() const { return traffic_; }
  virtual int rank() const = 0;
  virtual int size() const = 0;
  enum class ReduceOp { Sum, Max };
  /// In-place sum (or max) over the group.
  virtual llvm::Error allReduce(void *buf, size_t count, DType dtype, ReduceOp op = ReduceOp::Sum) = 0;
  /// recv holds size() blocks of `count` elements; block r comes from rank r.
  virtual llvm::Error allGather(const void *send, void *recv, size_t count, DType dtype) = 0;
  /// send holds size() blocks of `count`; recv gets the sum of every rank's block rank().
  virtual llvm::Error reduceScatter(const void *send, void *recv, size_t count, DType dtype) = 0;
  virtual llvm::Error broadcast(void *buf, size_t count, DType dtype, int root) = 0;
  virtual llvm::Error send(const void *buf, size_t count, DType dtype, int peer, int tag) = 0;
  virtual llvm::Error recv(void *buf, size_t count, DType dtype, int peer, int tag) = 0;
  virtual llvm::Error barrier() = 0;

  /// Orders this rank's next operations on this communicator after `ready`,
  /// an event of the device's compute stream (Device.h's stream rules): they
  /// read and write device memory only once the work it captured is done.
  /// A host-driven backend (MPI, the default) waits for it here and then
  /// calls MPI; a device-driven one (NCCL) makes its communication stream
  /// wait for it, and the host goes on.
  virtual void follow(const Event &ready) { ready.synchronize(); }

  // Non-blocking forms of the above: each returns a handle for wait() or
  // test(), and its buffers belong to the communicator until the operation
  // finished. Every member starts the same collectives in the same order (as
  // MPI and NCCL require), all blocking or all non-blocking, and may wait for
  // them in any order; a handle is reused once its operation finished.

  /// Non-blocking in-place sum.
  llvm::Expected<int> startAllReduce(void *buf, size_t count, DType dtype) {
    return startAllReduce(buf, count, dtype, ReduceOp::Sum);
  }
  virtual llvm::Expected<int> startAllReduce(void *buf, size_t count, DType dtype, ReduceOp op) = 0;
  virtual llvm::Expected<int> startAllGather(const void *send, void *recv, size_t count, DType dtype) = 0;
  virtual llvm::Expected<int> startReduceScatter(const void *send, void *recv, size_t count, DType dtype) = 0;
  virtual llvm::Expected<int> startBroadcast(void *buf, size_t count, DType dtype, int root) = 0;
  virtual llvm::Expected<int> startSend(const void *buf, size_t count, DType dtype, int peer, int tag) = 0;
  virtual llvm::Expected<int> startRecv(void *buf, size_t count, DType dtype, int peer, int tag) = 0;
  virtual llvm::Expected<int> startBarrier() = 0;
  /// Blocks until the operation finished, under the deadline of a blocking
  /// call (an error names the ranks that did not arrive).
  virtual llvm::Error wait(int handle) = 0;
  /// True when the operation finished (its handle is then free, as after
  /// wait()); never blocks and has no deadline.
  virtual llvm::Expected<bool> test(int handle) = 0;
  /// Lets started non-blocking operations advance (MPI moves them only inside
  /// MPI calls): call it now and then while computing.
  virtual void progress() = 0;

  /// The sub-group of the members that pass the same `color`, ranked by
  /// `key` (collective over this group); `name` (a mesh axis) is what
  /// diagnostics call it.
  virtual llvm::Expected<std::unique_ptr<Communicator>> splitGroup(int color, int key,
                                                                   llvm::StringRef name) const = 0;

protected:
  enum class Moved { AllReduce, AllGather, ReduceScatter, Other };
  /// Backends call this for every operation they start: `wholeBytes` is an
  /// all-reduce's or broadcast's buffer, an all-gather's result, a
  /// reduce-scatter's operand, a message.
  void recordTraffic(Moved kind, double wholeBytes) {
    double n = size(), ring = n > 1 ? (n - 1) / n : 0;
    ++traffic_.calls;
    switch (kind) {
    case Moved::AllReduce: traffic_.allReduce += 2 * ring * wholeBytes; break;
    case Moved::AllGather: traffic_.allGather += ring * wholeBytes; break;
    case Moved::ReduceScatter: traffic_.reduceScatter += ring * wholeBytes; break;
    case Moved::Other: traffic_.other += wholeBytes; break;
    }
  }

private:
  CommTraffic traffic_;
};

/// Communicators a program's collectives use, by mesh axis name.
struct RuntimeEnv {
  llvm::StringMap<Communicator *> groups;
  /// Groups split off an axis's by the kernels that need them (runs of a kv
  /// head's copies, partita.SumCopies), one per name for every program.
  mutable llvm::StringMap<std::unique_ptr<Communicator>> subgroups;
  Communicator *group(llvm::StringRef axis) const {
    auto it = groups.find(axis);
    return it == groups.end() ? nullptr : it->second;
  }
};

class Watchdog;
class NodeCollectives;

/// How long a collective or receive may wait by default (as NCCL's and
/// torch.distributed's watchdogs): long enough for a slow step, short enough
/// that a hung job ends.
constexpr double kDefaultCollectiveTimeout = 300;

/// MPI backend. The world communicator needs MPI initialised by the caller.
class MpiCommunicator final : public Communicator {
public:
  /// Collective over MPI_COMM_WORLD (it sets up the watchdog's table).
  /// timeoutSeconds <= 0: waits have no deadline.
  static std::unique_ptr<MpiCommunicator> world(double timeoutSeconds = kDefaultCollectiveTimeout);
  /// The sub-group of the ranks that pass the same `color` (MPI_Comm_split);
  /// `name` (a mesh axis) is what watchdog messages call it.
  llvm::Expected<std::unique_ptr<MpiCommunicator>> split(int color, int key, llvm::StringRef name = "") const;
  ~MpiCommunicator() override;
  /// A blocking collective that every member entered but that outlasts the
  /// deadline is ended from a watchdog thread: `handler` gets the message and
  /// must end the process (without it: the message on stderr, then _exit(1)).
  static void setTimeoutHandler(void (*handler)(const char *message));

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  llvm::Error allReduce(void *buf, size_t count, DType dtype, ReduceOp op = ReduceOp::Sum) override;
  llvm::Error allGather(const void *send, void *recv, size_t count, DType dtype) override;
  llvm::Error reduceScatter(const void *send, void *recv, size_t count, DType dtype) override;
  llvm::Error broadcast(void *buf, size_t count, DType dtype, int root) override;
  llvm::Error send(const void *buf, size_t count, DType dtype, int peer, int tag) override;
  llvm::Error recv(void *buf, size_t count, DType dtype, int peer, int tag) override;
  llvm::Error barrier() override;
  using Communicator::startAllReduce;
  llvm::Expected<int> startAllReduce(void *buf, size_t count, DType dtype, ReduceOp op) override;
  llvm::Expected<int> startAllGather(const void *send, void *recv, size_t count, DType dtype) override;
  llvm::Expected<int> startReduceScatter(const void *send, void *recv, size_t count, DType dtype) override;
  llvm::Expected<int> startBroadcast(void *buf, size_t count, DType dtype, int root) override;
  llvm::Expected<int> startSend(const void *buf, size_t count, DType dtype, int peer, int tag) override;
  llvm::Expected<int> startRecv(void *buf, size_t count, DType dtype, int peer, int tag) override;
  llvm::Expected<int> startBarrier() override;
  llvm::Error wait(int handle) override;
  llvm::Expected<bool> test(int handle) override;
  void progress() override;
  llvm::Expected<std::unique_ptr<Communicator>> splitGroup(int color, int key, llvm::StringRef name) const override;

private:
  struct Pending; // a started operation: its request, what it is and whom it waits for
  std::vector<std::unique_ptr<Pending>> requests_; // by handle; null once finished
  MpiCommunicator(void *comm, bool owned, std::shared_ptr<Watchdog> watchdog, llvm::StringRef name);
  /// A started collective of this group (it arrives in the watchdog's table)
  /// or a point-to-point operation with `peer`.
  std::unique_ptr<Pending> pending(int op, int peer = -1, int tag = 0);
  /// The handle of `p`, whose MPI call returned `rc`.
  llvm::Expected<int> track(std::unique_ptr<Pending> p, int rc, const char *what);
  /// The started operation of `handle`, or null.
  Pending *find(int handle) const;
  /// Waits for `request` (an MPI_Request) under the watchdog.
  llvm::Error finish(void *request, int op, int64_t seq, int peer = -1, int tag = 0);
  /// A blocking collective: waits for every member to arrive, then `call`.
  llvm::Error collective(int op, const char *what, llvm::function_ref<int()> call);
  /// The group's shared segment for a collective of `bytes` (its whole
  /// buffer) when that is at least `minBytes`, or null: MPI then moves it.
  /// Made on the first large collective (every member is in it then), kept
  /// for the communicator's life.
  NodeCollectives *node(size_t bytes, size_t minBytes);
  void *comm_; // MPI_Comm, kept opaque so mpi.h stays out of the interface
  bool owned_;
  int rank_ = 0, size_ = 1;
  std::shared_ptr<Watchdog> watchdog_;
  int group_ = 0;              // the watchdog's number for this group
  std::vector<int> worldRanks_; // group rank -> world rank
  std::unique_ptr<NodeCollectives> node_;
  bool nodeTried_ = false;
};

} // namespace partita::rt
