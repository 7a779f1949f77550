//===- NcclCommunicator.cpp -----------------------------------------------===//
#include "runtime/cuda/NcclCommunicator.h"
#include "runtime/comm/CommunicatorFactory.h"
#include "runtime/cuda/CudaDevice.h"
#include "llvm/Support/FormatVariadic.h"
#include <atomic>
#include <chrono>
#include <cstring>
#include <cuda_runtime.h>
#include <functional>
#include <mpi.h>
#include <mutex>
#include <nccl.h>
#include <thread>
#include <unistd.h>

namespace partita::rt {

namespace {

llvm::Error ncclError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

std::optional<ncclDataType_t> ncclType(DType t) {
  switch (t) {
  case DType::F32: return ncclFloat32;
  case DType::F16: return ncclFloat16;
  case DType::BF16: return ncclBfloat16;
  case DType::F64: return ncclFloat64;
  case DType::I64: return ncclInt64;
  case DType::I32: return ncclInt32;
  case DType::I8: return ncclInt8;
  case DType::U8:
  case DType::Bool: return ncclUint8;
  default: return std::nullopt;
  }
}

using Clock = std::chrono::steady_clock;

} // namespace

llvm::Expected<std::array<char, 128>> ncclNewId() {
  static_assert(sizeof(ncclUniqueId) == 128, "NCCL's unique id is 128 bytes");
  ncclUniqueId unique;
  ncclResult_t r = ncclGetUniqueId(&unique);
  if (r != ncclSuccess)
    return ncclError(llvm::Twine("ncclGetUniqueId failed: ") + ncclGetErrorString(r));
  std::array<char, 128> id;
  std::memcpy(id.data(), &unique, sizeof unique);
  return id;
}

llvm::Expected<std::array<char, 128>> ncclIdOverMpi(void *mpiComm, int root) {
  MPI_Comm comm = *static_cast<MPI_Comm *>(mpiComm);
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  std::array<char, 128> id{};
  int made = 1;
  if (rank == root) {
    auto mine = ncclNewId();
    made = static_cast<bool>(mine);
    if (mine)
      id = *mine;
    else
      llvm::consumeError(mine.takeError());
  }
  // Every member learns whether the root made one (no member waits forever).
  MPI_Bcast(&made, 1, MPI_INT, root, comm);
  if (!made)
    return ncclError("ncclGetUniqueId failed on rank " + llvm::Twine(root));
  if (MPI_Bcast(id.data(), static_cast<int>(id.size()), MPI_BYTE, root, comm) != MPI_SUCCESS)
    return ncclError("broadcasting NCCL's unique id over MPI failed");
  return id;
}

struct NcclCommunicator::State {
  CudaDevice &device;
  ncclComm_t comm = nullptr;
  std::string name; // the mesh axis, in messages
  std::vector<int> worldRanks;
  double timeout;
  void *barrierWord = nullptr; // a device float the barrier all-reduces
  struct Op {
    cudaEvent_t ready = nullptr, done = nullptr; // made once per slot, reused
    std::string what;
    Clock::time_point started;
    bool inFlight = false, handedOut = false;
  };
  std::mutex mutex;
  std::vector<std::unique_ptr<Op>> ops; // by handle
  std::atomic<bool> stopping{false};
  std::thread watchdog;

  State(CudaDevice &d, double t) : device(d), timeout(t) {}

  std::string describe() const {
    std::string ranks;
    for (size_t i = 0; i < worldRanks.size(); ++i)
      ranks += (i ? ", " : "") + std::to_string(worldRanks[i]);
    return "group '" + (name.empty() ? std::string("world") : name) + "' (world ranks " + ranks + ")";
  }

  /// Enqueues `call` on the communication stream after the compute stream's
  /// work so far; its handle.
  llvm::Expected<int> enqueue(const std::string &what, const std::function<ncclResult_t(cudaStream_t)> &call) {
    // A slot is taken under the lock; NCCL is called without it (a call can
    // block the host, and the watchdog must still run meanwhile).
    Op *op = nullptr;
    size_t h = 0;
    {
      std::lock_guard<std::mutex> lock(mutex);
      while (h < ops.size() && (ops[h]->inFlight || ops[h]->handedOut))
        ++h;
      if (h == ops.size()) {
        auto made = std::make_unique<Op>();
        device.check(cudaEventCreateWithFlags(&made->ready, cudaEventDisableTiming), "cudaEventCreate");
        device.check(cudaEventCreateWithFlags(&made->done, cudaEventDisableTiming), "cudaEventCreate");
        ops.push_back(std::move(made));
      }
      op = ops[h].get();
      op->handedOut = true; // reserved: no other enqueue takes it
    }
    cudaStream_t stream = device.communicationStream();
    device.check(cudaEventRecord(op->ready, device.computeStream()), "cudaEventRecord");
    device.check(cudaStreamWaitEvent(stream, op->ready, 0), "cudaStreamWaitEvent");
    ncclResult_t r = call(stream);
    if (r != ncclSuccess && r != ncclInProgress) {
      std::lock_guard<std::mutex> lock(mutex);
      op->handedOut = false;
      return ncclError(what + " on " + describe() + ": " + ncclGetErrorString(r));
    }
    device.check(cudaEventRecord(op->done, stream), "cudaEventRecord");
    std::lock_guard<std::mutex> lock(mutex);
    op->what = what;
    op->started = Clock::now();
    op->inFlight = true;
    return static_cast<int>(h);
  }

  /// The compute stream waits for operation `h`; the handle is free again.
  llvm::Error follow(int h) {
    std::lock_guard<std::mutex> lock(mutex);
    if (h < 0 || static_cast<size_t>(h) >= ops.size() || !ops[h]->handedOut)
      return ncclError("no operation in flight has handle " + llvm::Twine(h) + " on " + describe());
    device.check(cudaStreamWaitEvent(device.computeStream(), ops[h]->done, 0), "cudaStreamWaitEvent");
    ops[h]->handedOut = false;
    return llvm::Error::success();
  }

  /// The watchdog: an operation past the deadline, or NCCL's asynchronous
  /// error, aborts the communicator and ends the process saying why.
  void watch() {
    cudaSetDevice(device.ordinal()); // else its first CUDA call makes a context on GPU 0
    while (!stopping.load()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      std::string failure;
      {
        std::lock_guard<std::mutex> lock(mutex);
        for (auto &op : ops) {
          if (!op->inFlight)
            continue;
          cudaError_t state = cudaEventQuery(op->done);
          if (state == cudaSuccess) {
            op->inFlight = false;
            continue;
          }
          if (state != cudaErrorNotReady) { // the GPU failed: say so now, not at the deadline
            failure = op->what + " on " + describe() + " failed on the GPU: " + cudaGetErrorString(state);
            break;
          }
          double waited = std::chrono::duration<double>(Clock::now() - op->started).count();
          if (timeout > 0 && waited > timeout)
            failure = llvm::formatv("{0} on {1} did not complete within {2} s (--collective-timeout): a member "
                                    "never joined it or died",
                                    op->what, describe(), timeout)
                          .str();
        }
        ncclResult_t async = ncclSuccess;
        if (failure.empty() && comm && ncclCommGetAsyncError(comm, &async) == ncclSuccess && async != ncclSuccess &&
            async != ncclInProgress)
          failure = "NCCL reported an error on " + describe() + ": " + ncclGetErrorString(async);
      }
      if (failure.empty())
        continue;
      ncclCommAbort(comm); // frees the GPU from the hung kernels, as NCCL's own watchdog does
      std::string msg = "partita: " + failure + "; the NCCL communicator was aborted\n";
      if (::write(2, msg.data(), msg.size()) < 0) {
      }
      int initialized = 0;
      MPI_Initialized(&initialized);
      if (initialized)
        MPI_Abort(MPI_COMM_WORLD, 1);
      _exit(1);
    }
  }

  void startWatchdog() { watchdog = std::thread([this] { watch(); }); }

  ~State() {
    stopping.store(true);
    if (watchdog.joinable())
      watchdog.join();
    cudaStreamSynchronize(device.communicationStream());
    for (auto &op : ops) {
      cudaEventDestroy(op->ready);
      cudaEventDestroy(op->done);
    }
    if (barrierWord)
      device.deallocate(barrierWord);
    if (comm)
      ncclCommDestroy(comm);
  }
};

NcclCommunicator::NcclCommunicator(std::unique_ptr<State> state) : state_(std::move(state)) {
  ncclCommUserRank(state_->comm, &rank_);
  ncclCommCount(state_->comm, &size_);
  state_->barrierWord = state_->device.allocate(sizeof(float));
  state_->startWatchdog();
}

NcclCommunicator::~NcclCommunicator() = default;

llvm::Expected<std::unique_ptr<NcclCommunicator>> NcclCommunicator::world(CudaDevice &device, double timeoutSeconds) {
  MPI_Comm world = MPI_COMM_WORLD;
  auto id = ncclIdOverMpi(&world);
  if (!id)
    return id.takeError();
  int rank = 0, size = 1;
  MPI_Comm_rank(world, &rank);
  MPI_Comm_size(world, &size);
  return join(device, *id, rank, size, timeoutSeconds);
}

llvm::Expected<std::unique_ptr<NcclCommunicator>> NcclCommunicator::join(CudaDevice &device,
                                                                         const std::array<char, 128> &id, int rank,
                                                                         int size, double timeoutSeconds) {
  ncclUniqueId unique;
  std::memcpy(&unique, id.data(), sizeof unique);
  auto state = std::make_unique<State>(device, timeoutSeconds);
  if (cudaSetDevice(device.ordinal()) != cudaSuccess)
    return ncclError("rank " + llvm::Twine(rank) + ": cudaSetDevice failed");
  ncclResult_t r = ncclCommInitRank(&state->comm, size, unique, rank);
  if (r != ncclSuccess)
    return ncclError("rank " + llvm::Twine(rank) + ": ncclCommInitRank failed: " + ncclGetErrorString(r) +
                     " (NCCL refuses two ranks on one GPU: run at most one rank per GPU, or the mpi backend)");
  for (int i = 0; i < size; ++i)
    state->worldRanks.push_back(i);
  return std::unique_ptr<NcclCommunicator>(new NcclCommunicator(std::move(state)));
}

llvm::Expected<std::unique_ptr<Communicator>> NcclCommunicator::splitGroup(int color, int key,
                                                                           llvm::StringRef name) const {
  auto state = std::make_unique<State>(state_->device, state_->timeout);
  state->name = name.str();
  ncclResult_t r = ncclCommSplit(state_->comm, color, key, &state->comm, nullptr);
  if (r != ncclSuccess)
    return ncclError("ncclCommSplit of " + state_->describe() + " into '" + name + "': " + ncclGetErrorString(r));
  // The new group's world ranks: every member's, gathered over the parent
  // (members of other colors send theirs too; each keeps its own group's).
  int mine[2] = {color, key};
  std::vector<int> all(2 * size_);
  void *buf = state_->device.allocate(all.size() * sizeof(int));
  state_->device.copyFromHost(static_cast<char *>(buf) + sizeof mine * rank_, mine, sizeof mine);
  auto self = const_cast<NcclCommunicator *>(this);
  if (auto err = self->allGather(static_cast<char *>(buf) + sizeof mine * rank_, buf, 2, DType::I32))
    return std::move(err);
  if (auto err = state_->device.finishWork())
    return std::move(err);
  state_->device.copyToHost(all.data(), buf, all.size() * sizeof(int));
  state_->device.deallocate(buf);
  std::vector<std::pair<int, int>> members; // (key, world rank)
  for (int r2 = 0; r2 < size_; ++r2)
    if (all[2 * r2] == color)
      members.push_back({all[2 * r2 + 1], state_->worldRanks[r2]});
  std::stable_sort(members.begin(), members.end(),
                   [](const auto &a, const auto &b) { return a.first < b.first; });
  for (const auto &m : members)
    state->worldRanks.push_back(m.second);
  return std::unique_ptr<Communicator>(new NcclCommunicator(std::move(state)));
}

#define PARTITA_NCCL_TYPE(dtype)                                                                                   \
  auto type = ncclType(dtype);                                                                                     \
  if (!type)                                                                                                       \
    return ncclError(llvm::Twine("NCCL moves no ") + dtypeName(dtype) + " values");

llvm::Expected<int> NcclCommunicator::startAllReduce(void *buf, size_t count, DType dtype, ReduceOp op) {
  PARTITA_NCCL_TYPE(dtype)
  recordTraffic(Moved::AllReduce, static_cast<double>(count * dtypeSize(dtype)));
  ncclRedOp_t red = op == ReduceOp::Max ? ncclMax : ncclSum;
  return state_->enqueue("all-reduce", [&](cudaStream_t s) {
    return ncclAllReduce(buf, buf, count, *type, red, state_->comm, s);
  });
}

llvm::Expected<int> NcclCommunicator::startAllGather(const void *send, void *recv, size_t count, DType dtype) {
  PARTITA_NCCL_TYPE(dtype)
  recordTraffic(Moved::AllGather, static_cast<double>(count * size_ * dtypeSize(dtype)));
  return state_->enqueue("all-gather", [&](cudaStream_t s) {
    return ncclAllGather(send, recv, count, *type, state_->comm, s);
  });
}

llvm::Expected<int> NcclCommunicator::startReduceScatter(const void *send, void *recv, size_t count, DType dtype) {
  PARTITA_NCCL_TYPE(dtype)
  recordTraffic(Moved::ReduceScatter, static_cast<double>(count * size_ * dtypeSize(dtype)));
  return state_->enqueue("reduce-scatter", [&](cudaStream_t s) {
    return ncclReduceScatter(send, recv, count, *type, ncclSum, state_->comm, s);
  });
}

llvm::Expected<int> NcclCommunicator::startBroadcast(void *buf, size_t count, DType dtype, int root) {
  PARTITA_NCCL_TYPE(dtype)
  recordTraffic(Moved::Other, static_cast<double>(count * dtypeSize(dtype)));
  return state_->enqueue("broadcast from rank " + std::to_string(root), [&](cudaStream_t s) {
    return ncclBroadcast(buf, buf, count, *type, root, state_->comm, s);
  });
}

llvm::Expected<int> NcclCommunicator::startSend(const void *buf, size_t count, DType dtype, int peer, int tag) {
  PARTITA_NCCL_TYPE(dtype)
  recordTraffic(Moved::Other, static_cast<double>(count * dtypeSize(dtype)));
  return state_->enqueue("send to rank " + std::to_string(peer), [&](cudaStream_t s) {
    return ncclSend(buf, count, *type, peer, state_->comm, s);
  });
}

llvm::Expected<int> NcclCommunicator::startRecv(void *buf, size_t count, DType dtype, int peer, int tag) {
  PARTITA_NCCL_TYPE(dtype)
  return state_->enqueue("receive from rank " + std::to_string(peer), [&](cudaStream_t s) {
    return ncclRecv(buf, count, *type, peer, state_->comm, s);
  });
}

llvm::Expected<int> NcclCommunicator::startBarrier() {
  return state_->enqueue("barrier", [&](cudaStream_t s) {
    return ncclAllReduce(state_->barrierWord, state_->barrierWord, 1, ncclFloat32, ncclSum, state_->comm, s);
  });
}

llvm::Error NcclCommunicator::wait(int handle) { return state_->follow(handle); }

llvm::Expected<bool> NcclCommunicator::test(int handle) {
  if (handle < 0 || static_cast<size_t>(handle) >= state_->ops.size())
    return ncclError("no operation has handle " + llvm::Twine(handle));
  cudaError_t done = cudaEventQuery(state_->ops[handle]->done);
  if (done == cudaErrorNotReady)
    return false;
  if (done != cudaSuccess)
    return ncclError("an operation on " + state_->describe() + " failed on the GPU: " + cudaGetErrorString(done));
  if (auto err = state_->follow(handle))
    return std::move(err);
  return true;
}

void NcclCommunicator::follow(const Event &ready) { state_->device.communicationWaits(ready); }

// The blocking forms: enqueued, and followed by the compute stream.
static llvm::Error followed(NcclCommunicator &c, llvm::Expected<int> h) {
  if (!h)
    return h.takeError();
  return c.wait(*h);
}
llvm::Error NcclCommunicator::allReduce(void *buf, size_t count, DType dtype, ReduceOp op) {
  return followed(*this, startAllReduce(buf, count, dtype, op));
}
llvm::Error NcclCommunicator::allGather(const void *send, void *recv, size_t count, DType dtype) {
  return followed(*this, startAllGather(send, recv, count, dtype));
}
llvm::Error NcclCommunicator::reduceScatter(const void *send, void *recv, size_t count, DType dtype) {
  return followed(*this, startReduceScatter(send, recv, count, dtype));
}
llvm::Error NcclCommunicator::broadcast(void *buf, size_t count, DType dtype, int root) {
  return followed(*this, startBroadcast(buf, count, dtype, root));
}
llvm::Error NcclCommunicator::send(const void *buf, size_t count, DType dtype, int peer, int tag) {
  return followed(*this, startSend(buf, count, dtype, peer, tag));
}
llvm::Error NcclCommunicator::recv(void *buf, size_t count, DType dtype, int peer, int tag) {
  return followed(*this, startRecv(buf, count, dtype, peer, tag));
}
llvm::Error NcclCommunicator::barrier() {
  if (auto err = followed(*this, startBarrier()))
    return err;
  return state_->device.finishWork(); // the host waits too: a barrier orders the processes
}

// The "nccl" backend of makeWorldCommunicator: CommunicatorOptions::device
// must be the rank's CUDA device. Kept in the link by this (unmangled) name
// (runtime/cuda/CMakeLists.txt).
extern "C" {
CommunicatorRegistrar partita_nccl_communicator(
    "nccl", [](const CommunicatorOptions &options) -> llvm::Expected<std::unique_ptr<Communicator>> {
      int initialized = 0;
      MPI_Initialized(&initialized);
      if (!initialized)
        return ncclError("the nccl communicator bootstraps over MPI: initialise MPI first (MPI_Init)");
      auto *device = dynamic_cast<CudaDevice *>(options.device);
      if (!device)
        return ncclError("the nccl communicator needs --device cuda");
      auto comm = NcclCommunicator::world(*device, options.timeoutSeconds);
      if (!comm)
        return comm.takeError();
      return std::unique_ptr<Communicator>(std::move(*comm));
    });
}

} // namespace partita::rt
