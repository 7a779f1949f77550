//===- MpiCommunicator.cpp ------------------------------------------------===//
//
// A collective waits (sleeping, with a deadline) until every member has
// arrived, then makes the blocking MPI call; point-to-point operations and
// started (non-blocking) operations are polled by Watchdog::wait. See
// Watchdog.h.
//===----------------------------------------------------------------------===//
#include "runtime/comm/Communicator.h"
#include "runtime/core/HalfConvert.h"
#include "runtime/comm/CommunicatorFactory.h"
#include "runtime/comm/NodeCollectives.h"
#include "runtime/comm/Watchdog.h"
#include "compiler/ir/Tensor.h"
#include <algorithm>
#include <mpi.h>
#include <vector>

namespace partita::rt {

namespace {
MPI_Comm &asComm(void *&p) { return *reinterpret_cast<MPI_Comm *>(&p); }

// 16-bit floats (mixed precision's bf16 / fp16) travel as MPI types of their
// own, two bytes each, which MPI moves as they are; a sum or max of them is a
// user op that computes each element in float32 and rounds the result, as
// NCCL reduces bf16 and fp16.
struct HalfTypes {
  MPI_Datatype bf16 = MPI_DATATYPE_NULL, f16 = MPI_DATATYPE_NULL;
  MPI_Op sum = MPI_OP_NULL, max = MPI_OP_NULL;
};

template <bool Max> void reduceHalves(void *in, void *inout, int *len, MPI_Datatype *type);

const HalfTypes &halfTypes() { // made on first use (MPI is initialised by then), freed by MPI_Finalize
  static HalfTypes t = [] {
    HalfTypes h;
    MPI_Type_contiguous(1, MPI_UINT16_T, &h.bf16);
    MPI_Type_commit(&h.bf16);
    MPI_Type_contiguous(1, MPI_UINT16_T, &h.f16);
    MPI_Type_commit(&h.f16);
    MPI_Op_create(&reduceHalves<false>, /*commute=*/1, &h.sum);
    MPI_Op_create(&reduceHalves<true>, /*commute=*/1, &h.max);
    return h;
  }();
  return t;
}

template <bool Max> void reduceHalves(void *in, void *inout, int *len, MPI_Datatype *type) {
  DType t = *type == halfTypes().bf16 ? DType::BF16 : DType::F16;
  const auto *a = static_cast<const uint16_t *>(in);
  auto *b = static_cast<uint16_t *>(inout);
  combineHalfRows(t, a, b, *len, Max);
}

llvm::Expected<MPI_Datatype> mpiType(DType t) {
  switch (t) {
  case DType::F32: return MPI_FLOAT;
  case DType::F64: return MPI_DOUBLE;
  case DType::I64: return MPI_INT64_T;
  case DType::I32: return MPI_INT32_T;
  case DType::U8: return MPI_UINT8_T; // also raw bytes, for a send of any type
  case DType::BF16: return halfTypes().bf16;
  case DType::F16: return halfTypes().f16;
  default:
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "MPI reductions do not support element type " + dtypeName(t));
  }
}

/// How an operation that only moves data (send, receive, broadcast,
/// all-gather) sends `count` elements of `t`: as MPI's type where it has one,
/// else as bytes. Any dtype crosses a pipeline cut (a bool mask, an int8
/// table); only reductions need MPI to know the type.
struct MovedAs {
  MPI_Datatype type;
  int count;
};
MovedAs movedAs(DType t, size_t count) {
  if (auto typed = mpiType(t))
    return {*typed, static_cast<int>(count)};
  else
    llvm::consumeError(typed.takeError());
  return {MPI_BYTE, static_cast<int>(count * dtypeSize(t))};
}

MPI_Op mpiOp(Communicator::ReduceOp op, DType t) {
  bool max = op == Communicator::ReduceOp::Max;
  if (isHalfFloat(t))
    return max ? halfTypes().max : halfTypes().sum;
  return max ? MPI_MAX : MPI_SUM;
}

llvm::Error check(int rc, const char *what) {
  if (rc == MPI_SUCCESS)
    return llvm::Error::success();
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, msg, &len);
  return llvm::createStringError(llvm::inconvertibleErrorCode(), llvm::Twine(what) + " failed: " + msg);
}
} // namespace

struct MpiCommunicator::Pending {
  MPI_Request request = MPI_REQUEST_NULL;
  CommOp op = CommOp::None;
  int64_t seq = 0; // in the group's collectives; 0 for point-to-point
  int peer = -1, tag = 0;
};

MpiCommunicator::MpiCommunicator(void *comm, bool owned, std::shared_ptr<Watchdog> watchdog, llvm::StringRef name)
    : comm_(comm), owned_(owned), watchdog_(std::move(watchdog)) {
  MPI_Comm_rank(asComm(comm_), &rank_);
  MPI_Comm_size(asComm(comm_), &size_);
  group_ = watchdog_->addGroup(name.str());
  MPI_Group mine, world;
  MPI_Comm_group(asComm(comm_), &mine);
  MPI_Comm_group(MPI_COMM_WORLD, &world);
  std::vector<int> local(size_);
  for (int r = 0; r < size_; ++r)
    local[r] = r;
  worldRanks_.resize(size_);
  MPI_Group_translate_ranks(mine, size_, local.data(), world, worldRanks_.data());
  MPI_Group_free(&mine);
  MPI_Group_free(&world);
}

MpiCommunicator::~MpiCommunicator() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (owned_ && !finalized)
    MPI_Comm_free(&asComm(comm_));
}

std::unique_ptr<MpiCommunicator> MpiCommunicator::world(double timeoutSeconds) {
  static_assert(sizeof(MPI_Comm) <= sizeof(void *), "MPI_Comm must fit a pointer");
  void *p = nullptr;
  asComm(p) = MPI_COMM_WORLD;
  return std::unique_ptr<MpiCommunicator>(new MpiCommunicator(p, false, Watchdog::create(timeoutSeconds), "world"));
}

llvm::Expected<std::unique_ptr<MpiCommunicator>> MpiCommunicator::split(int color, int key,
                                                                        llvm::StringRef name) const {
  void *p = nullptr;
  void *self = comm_;
  if (auto err = check(MPI_Comm_split(asComm(self), color, key, &asComm(p)), "MPI_Comm_split"))
    return std::move(err);
  return std::unique_ptr<MpiCommunicator>(new MpiCommunicator(p, true, watchdog_, name));
}

llvm::Error MpiCommunicator::finish(void *request, int op, int64_t seq, int peer, int tag) {
  WaitFor w{static_cast<CommOp>(op), group_, seq, worldRanks_, tag};
  if (peer >= 0)
    w.members = llvm::ArrayRef<int>(worldRanks_).slice(peer, 1);
  return watchdog_->wait(*static_cast<MPI_Request *>(request), w);
}

llvm::Error MpiCommunicator::collective(int op, const char *what, llvm::function_ref<int()> call) {
  WaitFor w{static_cast<CommOp>(op), group_, watchdog_->arrive(group_), worldRanks_};
  if (auto err = watchdog_->awaitArrivals(w))
    return err;
  watchdog_->beginBlocking(w);
  int rc = call();
  watchdog_->endBlocking(w);
  return check(rc, what);
}

void MpiCommunicator::setTimeoutHandler(void (*handler)(const char *message)) {
  Watchdog::setTimeoutHandler(handler);
}

// Large blocking reductions run in pieces of about a megabyte per rank: Open
// MPI's shared-memory reductions stage every byte through temporaries and
// FIFOs, which stay in cache for a piece and spill to memory for a whole
// large buffer. Measured with bench/tensor_parallel.sh, 2 ranks: all-reduce
// busbw 5.6 GB/s at 256 MB in one call, 9.9 in 1 MB pieces (9.3 at 1 MB
// itself); reduce-scatter 2.5-2.9 GB/s at 64-256 MB in one call, 5.5-5.9 as one
// MPI_Reduce per member per piece. All-gathers gain nothing from pieces (their
// output is written once either way) and are made whole.
constexpr size_t kPieceBytes = size_t(1) << 20;
/// Reduce-scatter as per-member reductions only in groups this small (a
/// node's tensor-parallel group): each piece costs a call per member.
constexpr int kPiecewiseReduceScatterMembers = 8;

/// Collectives of this many bytes and more go through the group's shared
/// segment when its members share a node (NodeCollectives.h); below it MPI
/// is as fast or faster (bench/tensor_parallel.sh, 2 ranks: the segment's
/// all-reduce and all-gather lose 10-30% to Open MPI's at 64-256 KB and win
/// from 1 MB; its reduce-scatter wins from 64 KB).
constexpr size_t kNodeMinBytes = size_t(1) << 20, kNodeMinReduceScatterBytes = size_t(64) << 10;

NodeCollectives *MpiCommunicator::node(size_t bytes, size_t minBytes) {
  if (bytes < minBytes)
    return nullptr;
  if (!nodeTried_) { // every member is here, with the same size (the collective's arguments agree)
    nodeTried_ = true;
    node_ = NodeCollectives::create(comm_);
  }
  return node_.get();
}

llvm::Error MpiCommunicator::allReduce(void *buf, size_t count, DType dtype, ReduceOp op) {
  auto t = mpiType(dtype);
  if (!t)
    return t.takeError();
  recordTraffic(Moved::AllReduce, static_cast<double>(count * dtypeSize(dtype)));
  size_t elem = dtypeSize(dtype), piece = std::max<size_t>(1, std::max(kPieceBytes, kPieceBytes / 4 * size_) / elem);
  return collective(static_cast<int>(CommOp::AllReduce), "MPI_Allreduce", [&] {
    if (NodeCollectives *n = NodeCollectives::reduces(dtype) ? node(count * elem, kNodeMinBytes) : nullptr) {
      n->allReduce(buf, count, dtype, op == ReduceOp::Max);
      return MPI_SUCCESS;
    }
    for (size_t off = 0; off < count; off += piece)
      if (int rc = MPI_Allreduce(MPI_IN_PLACE, static_cast<char *>(buf) + off * elem,
                                 static_cast<int>(std::min(piece, count - off)), *t, mpiOp(op, dtype), asComm(comm_)))
        return rc;
    return MPI_SUCCESS;
  });
}

llvm::Error MpiCommunicator::allGather(const void *send, void *recv, size_t count, DType dtype) {
  MovedAs t = movedAs(dtype, count);
  recordTraffic(Moved::AllGather, static_cast<double>(count * dtypeSize(dtype)) * size_);
  return collective(static_cast<int>(CommOp::AllGather), "MPI_Allgather", [&] {
    if (NodeCollectives *n = node(count * dtypeSize(dtype) * size_, kNodeMinBytes)) {
      n->allGather(send, recv, count, dtypeSize(dtype));
      return MPI_SUCCESS;
    }
    return MPI_Allgather(send, t.count, t.type, recv, t.count, t.type, asComm(comm_));
  });
}

llvm::Error MpiCommunicator::reduceScatter(const void *send, void *recv, size_t count, DType dtype) {
  auto t = mpiType(dtype);
  if (!t)
    return t.takeError();
  recordTraffic(Moved::ReduceScatter, static_cast<double>(count * dtypeSize(dtype)) * size_);
  size_t elem = dtypeSize(dtype), piece = std::max<size_t>(1, kPieceBytes / elem);
  // Without the group's segment: member r's block is the sum of every
  // member's block r, one MPI_Reduce to r per piece of the blocks, in groups
  // small enough; else one MPI_Reduce_scatter_block.
  bool piecewise = size_ <= kPiecewiseReduceScatterMembers && count > 2 * piece;
  return collective(static_cast<int>(CommOp::ReduceScatter), piecewise ? "MPI_Reduce" : "MPI_Reduce_scatter_block",
                    [&] {
    if (NodeCollectives *n = NodeCollectives::reduces(dtype) ? node(count * elem * size_, kNodeMinReduceScatterBytes)
                                                              : nullptr) {
      n->reduceScatter(send, recv, count, dtype);
      return MPI_SUCCESS;
    }
    if (!piecewise)
      return MPI_Reduce_scatter_block(send, recv, static_cast<int>(count), *t, mpiOp(ReduceOp::Sum, dtype),
                                      asComm(comm_));
    const char *in = static_cast<const char *>(send);
    for (size_t off = 0; off < count; off += piece)
      for (int root = 0; root < size_; ++root) {
        size_t n = std::min(piece, count - off);
        void *out = root == rank_ ? static_cast<char *>(recv) + off * elem : nullptr;
        if (int rc = MPI_Reduce(in + (root * count + off) * elem, out, static_cast<int>(n), *t,
                                mpiOp(ReduceOp::Sum, dtype), root, asComm(comm_)))
          return rc;
      }
    return MPI_SUCCESS;
  });
}

llvm::Error MpiCommunicator::broadcast(void *buf, size_t count, DType dtype, int root) {
  MovedAs t = movedAs(dtype, count);
  recordTraffic(Moved::Other, static_cast<double>(count * dtypeSize(dtype)));
  return collective(static_cast<int>(CommOp::Broadcast), "MPI_Bcast",
                    [&] { return MPI_Bcast(buf, t.count, t.type, root, asComm(comm_)); });
}

llvm::Error MpiCommunicator::send(const void *buf, size_t count, DType dtype, int peer, int tag) {
  MovedAs t = movedAs(dtype, count);
  recordTraffic(Moved::Other, static_cast<double>(count * dtypeSize(dtype)));
  watchdog_->heartbeat();
  MPI_Request req;
  if (auto err = check(MPI_Isend(buf, t.count, t.type, peer, tag, asComm(comm_), &req), "MPI_Isend"))
    return err;
  return finish(&req, static_cast<int>(CommOp::Send), 0, peer, tag);
}

llvm::Error MpiCommunicator::recv(void *buf, size_t count, DType dtype, int peer, int tag) {
  MovedAs t = movedAs(dtype, count);
  watchdog_->heartbeat();
  MPI_Request req;
  if (auto err = check(MPI_Irecv(buf, t.count, t.type, peer, tag, asComm(comm_), &req), "MPI_Irecv"))
    return err;
  return finish(&req, static_cast<int>(CommOp::Recv), 0, peer, tag);
}

llvm::Error MpiCommunicator::barrier() {
  return collective(static_cast<int>(CommOp::Barrier), "MPI_Barrier", [&] { return MPI_Barrier(asComm(comm_)); });
}

std::unique_ptr<MpiCommunicator::Pending> MpiCommunicator::pending(int op, int peer, int tag) {
  auto p = std::make_unique<Pending>();
  p->op = static_cast<CommOp>(op);
  p->peer = peer;
  p->tag = tag;
  if (peer < 0)
    p->seq = watchdog_->arrive(group_);
  else
    watchdog_->heartbeat();
  return p;
}

llvm::Expected<int> MpiCommunicator::track(std::unique_ptr<Pending> p, int rc, const char *what) {
  if (auto err = check(rc, what))
    return std::move(err);
  // Handles are slots, reused once finished.
  auto free = std::find(requests_.begin(), requests_.end(), nullptr);
  if (free != requests_.end()) {
    *free = std::move(p);
    return static_cast<int>(free - requests_.begin());
  }
  requests_.push_back(std::move(p));
  return static_cast<int>(requests_.size() - 1);
}

MpiCommunicator::Pending *MpiCommunicator::find(int handle) const {
  return handle >= 0 && handle < static_cast<int>(requests_.size()) ? requests_[handle].get() : nullptr;
}

llvm::Expected<int> MpiCommunicator::startAllReduce(void *buf, size_t count, DType dtype, ReduceOp op) {
  auto t = mpiType(dtype);
  if (!t)
    return t.takeError();
  recordTraffic(Moved::AllReduce, static_cast<double>(count * dtypeSize(dtype)));
  auto p = pending(static_cast<int>(CommOp::AllReduce));
  int rc = MPI_Iallreduce(MPI_IN_PLACE, buf, static_cast<int>(count), *t, mpiOp(op, dtype),
                          asComm(comm_), &p->request);
  return track(std::move(p), rc, "MPI_Iallreduce");
}

llvm::Expected<int> MpiCommunicator::startAllGather(const void *send, void *recv, size_t count, DType dtype) {
  MovedAs t = movedAs(dtype, count);
  recordTraffic(Moved::AllGather, static_cast<double>(count * dtypeSize(dtype)) * size_);
  auto p = pending(static_cast<int>(CommOp::AllGather));
  int rc = MPI_Iallgather(send, t.count, t.type, recv, t.count, t.type, asComm(comm_), &p->request);
  return track(std::move(p), rc, "MPI_Iallgather");
}

llvm::Expected<int> MpiCommunicator::startReduceScatter(const void *send, void *recv, size_t count, DType dtype) {
  auto t = mpiType(dtype);
  if (!t)
    return t.takeError();
  recordTraffic(Moved::ReduceScatter, static_cast<double>(count * dtypeSize(dtype)) * size_);
  auto p = pending(static_cast<int>(CommOp::ReduceScatter));
  int rc = MPI_Ireduce_scatter_block(send, recv, static_cast<int>(count), *t, mpiOp(ReduceOp::Sum, dtype),
                                     asComm(comm_), &p->request);
  return track(std::move(p), rc, "MPI_Ireduce_scatter_block");
}

llvm::Expected<int> MpiCommunicator::startBroadcast(void *buf, size_t count, DType dtype, int root) {
  MovedAs t = movedAs(dtype, count);
  recordTraffic(Moved::Other, static_cast<double>(count * dtypeSize(dtype)));
  auto p = pending(static_cast<int>(CommOp::Broadcast));
  int rc = MPI_Ibcast(buf, t.count, t.type, root, asComm(comm_), &p->request);
  return track(std::move(p), rc, "MPI_Ibcast");
}

llvm::Expected<int> MpiCommunicator::startSend(const void *buf, size_t count, DType dtype, int peer, int tag) {
  MovedAs t = movedAs(dtype, count);
  recordTraffic(Moved::Other, static_cast<double>(count * dtypeSize(dtype)));
  auto p = pending(static_cast<int>(CommOp::Send), peer, tag);
  int rc = MPI_Isend(buf, t.count, t.type, peer, tag, asComm(comm_), &p->request);
  return track(std::move(p), rc, "MPI_Isend");
}

llvm::Expected<int> MpiCommunicator::startRecv(void *buf, size_t count, DType dtype, int peer, int tag) {
  MovedAs t = movedAs(dtype, count);
  auto p = pending(static_cast<int>(CommOp::Recv), peer, tag);
  int rc = MPI_Irecv(buf, t.count, t.type, peer, tag, asComm(comm_), &p->request);
  return track(std::move(p), rc, "MPI_Irecv");
}

llvm::Expected<int> MpiCommunicator::startBarrier() {
  auto p = pending(static_cast<int>(CommOp::Barrier));
  int rc = MPI_Ibarrier(asComm(comm_), &p->request);
  return track(std::move(p), rc, "MPI_Ibarrier");
}

void MpiCommunicator::progress() {
  watchdog_->heartbeat();
  for (const auto &p : requests_) {
    int done = 0;
    if (p && p->request != MPI_REQUEST_NULL)
      MPI_Test(&p->request, &done, MPI_STATUS_IGNORE); // a completed request becomes MPI_REQUEST_NULL
  }
}

llvm::Error MpiCommunicator::wait(int handle) {
  Pending *p = find(handle);
  if (!p)
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "wait on a finished handle");
  llvm::Error err = finish(&p->request, static_cast<int>(p->op), p->seq, p->peer, p->tag);
  if (err) // still pending in MPI: keep the request (the rank aborts)
    return err;
  requests_[handle].reset();
  return err;
}

llvm::Expected<bool> MpiCommunicator::test(int handle) {
  Pending *p = find(handle);
  if (!p)
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "test of a finished handle");
  watchdog_->heartbeat();
  int done = 0;
  if (auto err = check(MPI_Test(&p->request, &done, MPI_STATUS_IGNORE), "MPI_Test"))
    return std::move(err);
  if (done) {
    watchdog_->leave(WaitFor{p->op, group_, p->seq, {}});
    requests_[handle].reset();
  }
  return done != 0;
}

llvm::Expected<std::unique_ptr<Communicator>> MpiCommunicator::splitGroup(int color, int key,
                                                                          llvm::StringRef name) const {
  auto group = split(color, key, name);
  if (!group)
    return group.takeError();
  return std::unique_ptr<Communicator>(std::move(*group));
}

// The "mpi" backend of makeWorldCommunicator. Kept in every binary that
// links the runtime by this (unmangled) name: see runtime/CMakeLists.txt.
extern "C" {
CommunicatorRegistrar partita_mpi_communicator(
    "mpi", [](const CommunicatorOptions &options) -> llvm::Expected<std::unique_ptr<Communicator>> {
      int initialized = 0;
      MPI_Initialized(&initialized);
      if (!initialized)
        return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                       "the mpi communicator needs MPI initialised first (MPI_Init)");
      return std::unique_ptr<Communicator>(MpiCommunicator::world(options.timeoutSeconds));
    });
}

} // namespace partita::rt
