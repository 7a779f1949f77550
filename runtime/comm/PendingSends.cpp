//===- PendingSends.cpp ---------------------------------------------------===//
#include "runtime/comm/PendingSends.h"
#include "runtime/core/MemoryLedger.h"
#include <algorithm>

namespace partita::rt {

PendingSends &PendingSends::process() {
  static auto *sends = new PendingSends(); // reachable for ever: no free under MPI at exit
  return *sends;
}

llvm::Expected<void *> PendingSends::allocate(Device &device, size_t bytes) {
  if (auto err = reap())
    return std::move(err);
  void *copy = device.allocate(std::max<size_t>(bytes, 1));
  if (!copy)
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "out of " + device.name() + " memory for " +
                                                                       std::to_string(bytes) + " bytes of a send's copy");
  device.ledger().chargeSendCopy(bytes);
  return copy;
}

void PendingSends::release(Device &device, void *copy, size_t bytes) {
  device.deallocate(copy);
  device.ledger().releaseSendCopy(bytes);
}

llvm::Error PendingSends::start(Communicator &comm, Device &device, void *copy, size_t bytes, size_t count,
                                DType dtype, int peer, int tag) {
  auto handle = comm.startSend(device.kernelAddress(copy), count, dtype, peer, tag);
  if (!handle) {
    release(device, copy, bytes);
    return handle.takeError();
  }
  pending_.push_back({&comm, *handle, &device, copy, bytes});
  return llvm::Error::success();
}

llvm::Error PendingSends::reap() {
  for (auto it = pending_.begin(); it != pending_.end();) {
    auto done = it->comm->test(it->handle);
    if (!done)
      return done.takeError();
    if (*done)
      release(*it->device, it->copy, it->bytes);
    it = *done ? pending_.erase(it) : std::next(it);
  }
  return llvm::Error::success();
}

llvm::Error PendingSends::drain() {
  while (!pending_.empty()) {
    if (auto err = pending_.front().comm->wait(pending_.front().handle))
      return err;
    release(*pending_.front().device, pending_.front().copy, pending_.front().bytes);
    pending_.pop_front();
  }
  return llvm::Error::success();
}

void PendingSends::abandon(Device &device) {
  for (auto it = pending_.begin(); it != pending_.end();) {
    if (it->device != &device) {
      ++it;
      continue;
    }
    auto done = it->comm->test(it->handle);
    if (done && *done)
      release(device, it->copy, it->bytes);
    else // MPI may still read it: left to the device's end
      llvm::consumeError(done.takeError());
    it = pending_.erase(it);
  }
}

} // namespace partita::rt
