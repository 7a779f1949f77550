//===- NcclCommunicator.h - collectives on GPUs through NCCL ---------------===//
//
// The "nccl" backend (runtime/comm/CommunicatorFactory.h; needs
// CommunicatorOptions::device to be a CudaDevice). Bootstrap: rank 0 of an MPI
// communicator makes NCCL's unique id and MPI broadcasts it (ncclIdOverMpi),
// then every rank joins with ncclCommInitRank; groups are ncclCommSplit off
// the world's.
//
// Stream order, as NCCL's process group in PyTorch: an operation first makes
// the device's communication stream wait for an event recorded on the
// compute stream (what it sends is computed), is enqueued there, and records
// its own event, which the compute stream waits for before the work that
// reads its result. The host never blocks: a "blocking" call returns once
// enqueued (later kernels follow it on the GPU), wait(handle) makes the
// compute stream wait, test(handle) queries the event.
//
// Watchdog: a thread polls every operation in flight; one that outlasts the
// deadline, or an asynchronous NCCL error (ncclCommGetAsyncError), aborts the
// communicator (ncclCommAbort) and ends the process through the timeout
// handler with a message naming the group, its world ranks and the
// operation. NCCL has no tags: sends and receives between two ranks match in
// the order they are posted.
//===----------------------------------------------------------------------===//
#pragma once
#include "runtime/comm/Communicator.h"
#include <array>
#include <memory>

namespace partita::rt {

class CudaDevice;

/// A new unique id of NCCL's (128 bytes), made here.
llvm::Expected<std::array<char, 128>> ncclNewId();
/// NCCL's unique id (128 bytes) made on rank `root` of the MPI communicator
/// `mpiComm` (an MPI_Comm) and broadcast to every member.
llvm::Expected<std::array<char, 128>> ncclIdOverMpi(void *mpiComm, int root = 0);

class NcclCommunicator final : public Communicator {
public:
  /// Every rank of MPI_COMM_WORLD calls it, each with its own GPU's device.
  static llvm::Expected<std::unique_ptr<NcclCommunicator>> world(CudaDevice &device, double timeoutSeconds);
  /// Rank `rank` of `size` joining the communicator of unique id `id`.
  static llvm::Expected<std::unique_ptr<NcclCommunicator>> join(CudaDevice &device, const std::array<char, 128> &id,
                                                                int rank, int size, double timeoutSeconds);
  ~NcclCommunicator() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  llvm::Error allReduce(void *buf, size_t count, DType dtype, ReduceOp op = ReduceOp::Sum) override;
  llvm::Error allGather(const void *send, void *recv, size_t count, DType dtype) override;
  llvm::Error reduceScatter(const void *send, void *recv, size_t count, DType dtype) override;
  llvm::Error broadcast(void *buf, size_t count, DType dtype, int root) override;
  llvm::Error send(const void *buf, size_t count, DType dtype, int peer, int tag) override;
  llvm::Error recv(void *buf, size_t count, DType dtype, int peer, int tag) override;
  llvm::Error barrier() override;
  /// The communication stream waits for `ready`; the host goes on.
  void follow(const Event &ready) override;
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
  void progress() override {}
  llvm::Expected<std::unique_ptr<Communicator>> splitGroup(int color, int key, llvm::StringRef name) const override;

private:
  struct State; // the NCCL communicator, its operations in flight and its watchdog
  explicit NcclCommunicator(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
  int rank_ = 0, size_ = 1;
};

} // namespace partita::rt
