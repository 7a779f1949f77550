//===- Communicator.h - collectives and point-to-point over a rank group --===//
//
// What programs need from a distributed engine. Buffers are device memory of
// the communicator's device; counts are elements. allGather and reduceScatter
// work on rank-major blocks (block r belongs to rank r), as MPI and NCCL do.
// Backends: MPI (CPU; here), NCCL (GPU; bootstrapped over MPI).
//
//===----------------------------------------------------------------------===//
#pragma once
#include "compiler/ir/DType.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Error.h"
#include <memory>

namespace partita::rt {

class Communicator {
public:
  virtual ~Communicator() = default;
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
  /// Non-blocking in-place sum: returns a handle for wait().
  virtual llvm::Expected<int> startAllReduce(void *buf, size_t count, DType dtype) = 0;
  virtual llvm::Error wait(int handle) = 0;
  /// Lets started non-blocking operations advance (MPI moves them only inside
  /// MPI calls): call it now and then while computing.
  virtual void progress() = 0;
};

/// Communicators a program's collectives use, by mesh axis name.
struct RuntimeEnv {
  llvm::StringMap<Communicator *> groups;
  Communicator *group(llvm::StringRef axis) const {
    auto it = groups.find(axis);
    return it == groups.end() ? nullptr : it->second;
  }
};

/// MPI backend. The world communicator needs MPI initialised by the caller.
class MpiCommunicator final : public Communicator {
public:
  static std::unique_ptr<MpiCommunicator> world();
  /// The sub-group of the ranks that pass the same `color` (MPI_Comm_split).
  llvm::Expected<std::unique_ptr<MpiCommunicator>> split(int color, int key) const;
  ~MpiCommunicator() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  llvm::Error allReduce(void *buf, size_t count, DType dtype, ReduceOp op = ReduceOp::Sum) override;
  llvm::Error allGather(const void *send, void *recv, size_t count, DType dtype) override;
  llvm::Error reduceScatter(const void *send, void *recv, size_t count, DType dtype) override;
  llvm::Error broadcast(void *buf, size_t count, DType dtype, int root) override;
  llvm::Error send(const void *buf, size_t count, DType dtype, int peer, int tag) override;
  llvm::Error recv(void *buf, size_t count, DType dtype, int peer, int tag) override;
  llvm::Error barrier() override;
  llvm::Expected<int> startAllReduce(void *buf, size_t count, DType dtype) override;
  llvm::Error wait(int handle) override;
  void progress() override;

private:
  std::vector<void *> requests_; // MPI_Request per handle, kept opaque
  MpiCommunicator(void *comm, bool owned);
  void *comm_; // MPI_Comm, kept opaque so mpi.h stays out of the interface
  bool owned_;
  int rank_ = 0, size_ = 1;
};

} // namespace partita::rt
