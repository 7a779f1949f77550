//===- MpiCommunicator.cpp ------------------------------------------------===//
#include <algorithm>
#include "runtime/comm/Communicator.h"
#include <mpi.h>
#include <vector>

namespace partita::rt {

namespace {
MPI_Comm &asComm(void *&p) { return *reinterpret_cast<MPI_Comm *>(&p); }

llvm::Expected<MPI_Datatype> mpiType(DType t) {
  switch (t) {
  case DType::F32: return MPI_FLOAT;
  case DType::F64: return MPI_DOUBLE;
  case DType::I64: return MPI_INT64_T;
  case DType::I32: return MPI_INT32_T;
  default:
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "MPI collectives do not support element type " + dtypeName(t));
  }
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

MpiCommunicator::MpiCommunicator(void *comm, bool owned) : comm_(comm), owned_(owned) {
  MPI_Comm_rank(asComm(comm_), &rank_);
  MPI_Comm_size(asComm(comm_), &size_);
}

MpiCommunicator::~MpiCommunicator() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (owned_ && !finalized)
    MPI_Comm_free(&asComm(comm_));
}

std::unique_ptr<MpiCommunicator> MpiCommunicator::world() {
  static_assert(sizeof(MPI_Comm) <= sizeof(void *), "MPI_Comm must fit a pointer");
  void *p = nullptr;
  asComm(p) = MPI_COMM_WORLD;
  return std::unique_ptr<MpiCommunicator>(new MpiCommunicator(p, false));
}

llvm::Expected<std::unique_ptr<MpiCommunicator>> MpiCommunicator::split(int color, int key) const {
  void *p = nullptr;
  void *self = comm_;
  if (auto err = check(MPI_Comm_split(asComm(self), color, key, &asComm(p)), "MPI_Comm_split"))
    return std::move(err);
  return std::unique_ptr<MpiCommunicator>(new MpiCommunicator(p, true));
}

llvm::Error MpiCommunicator::allReduce(void *buf, size_t count, DType dtype, ReduceOp op) {
  auto t = mpiType(dtype);
  if (!t)
    return t.takeError();
  return check(MPI_Allreduce(MPI_IN_PLACE, buf, static_cast<int>(count), *t, op == ReduceOp::Max ? MPI_MAX : MPI_SUM,
                             asComm(comm_)),
               "MPI_Allreduce");
}

llvm::Error MpiCommunicator::allGather(const void *send, void *recv, size_t count, DType dtype) {
  auto t = mpiType(dtype);
  if (!t)
    return t.takeError();
  return check(MPI_Allgather(send, static_cast<int>(count), *t, recv, static_cast<int>(count), *t, asComm(comm_)),
               "MPI_Allgather");
}

llvm::Error MpiCommunicator::reduceScatter(const void *send, void *recv, size_t count, DType dtype) {
  auto t = mpiType(dtype);
  if (!t)
    return t.takeError();
  return check(MPI_Reduce_scatter_block(send, recv, static_cast<int>(count), *t, MPI_SUM, asComm(comm_)),
               "MPI_Reduce_scatter_block");
}

llvm::Error MpiCommunicator::broadcast(void *buf, size_t count, DType dtype, int root) {
  auto t = mpiType(dtype);
  if (!t)
    return t.takeError();
  return check(MPI_Bcast(buf, static_cast<int>(count), *t, root, asComm(comm_)), "MPI_Bcast");
}

llvm::Error MpiCommunicator::send(const void *buf, size_t count, DType dtype, int peer, int tag) {
  auto t = mpiType(dtype);
  if (!t)
    return t.takeError();
  return check(MPI_Send(buf, static_cast<int>(count), *t, peer, tag, asComm(comm_)), "MPI_Send");
}

llvm::Error MpiCommunicator::recv(void *buf, size_t count, DType dtype, int peer, int tag) {
  auto t = mpiType(dtype);
  if (!t)
    return t.takeError();
  return check(MPI_Recv(buf, static_cast<int>(count), *t, peer, tag, asComm(comm_), MPI_STATUS_IGNORE),
               "MPI_Recv");
}

llvm::Error MpiCommunicator::barrier() { return check(MPI_Barrier(asComm(comm_)), "MPI_Barrier"); }

llvm::Expected<int> MpiCommunicator::startAllReduce(void *buf, size_t count, DType dtype) {
  auto t = mpiType(dtype);
  if (!t)
    return t.takeError();
  auto *req = new MPI_Request;
  if (auto err = check(MPI_Iallreduce(MPI_IN_PLACE, buf, static_cast<int>(count), *t, MPI_SUM, asComm(comm_), req),
                       "MPI_Iallreduce")) {
    delete req;
    return std::move(err);
  }
  // Handles are slots, reused once waited for.
  auto free = std::find(requests_.begin(), requests_.end(), nullptr);
  if (free != requests_.end()) {
    *free = req;
    return static_cast<int>(free - requests_.begin());
  }
  requests_.push_back(req);
  return static_cast<int>(requests_.size() - 1);
}

void MpiCommunicator::progress() {
  for (void *r : requests_) {
    auto *req = static_cast<MPI_Request *>(r);
    int done = 0;
    if (req && *req != MPI_REQUEST_NULL)
      MPI_Test(req, &done, MPI_STATUS_IGNORE); // a completed request becomes MPI_REQUEST_NULL
  }
}

llvm::Error MpiCommunicator::wait(int handle) {
  auto *req = static_cast<MPI_Request *>(requests_.at(handle));
  llvm::Error err = check(MPI_Wait(req, MPI_STATUS_IGNORE), "MPI_Wait");
  delete req;
  requests_[handle] = nullptr;
  return err;
}

} // namespace partita::rt
