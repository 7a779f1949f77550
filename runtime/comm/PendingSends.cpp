//===- PendingSends.cpp ---------------------------------------------------===//
#include "runtime/comm/PendingSends.h"
#include "runtime/core/MemoryLedger.h"
#include <algorithm>

namespace partita::rt {

PendingSends &PendingSends::process() {
  static auto *sends = new PendingSends(); // reachable for ever: no free under MPI at exit
  return *sends;
}

llvm::Error PendingSends::start(Communicator &comm, const void *data, size_t bytes, size_t count, DType dtype,
                                int peer, int tag) {
  if (auto err = reap())
    return err;
  const auto *p = static_cast<const uint8_t *>(data);
  pending_.push_back({&comm, -1, std::vector<uint8_t>(p, p + bytes)});
  MemoryLedger::process().chargeSendCopy(bytes);
  auto handle = comm.startSend(pending_.back().bytes.data(), count, dtype, peer, tag);
  if (!handle) {
    MemoryLedger::process().releaseSendCopy(bytes);
    pending_.pop_back();
    return handle.takeError();
  }
  pending_.back().handle = *handle;
  return llvm::Error::success();
}

llvm::Error PendingSends::reap() {
  for (auto it = pending_.begin(); it != pending_.end();) {
    auto done = it->comm->test(it->handle);
    if (!done)
      return done.takeError();
    if (*done)
      MemoryLedger::process().releaseSendCopy(it->bytes.size());
    it = *done ? pending_.erase(it) : std::next(it);
  }
  return llvm::Error::success();
}

llvm::Error PendingSends::drain() {
  while (!pending_.empty()) {
    if (auto err = pending_.front().comm->wait(pending_.front().handle))
      return err;
    MemoryLedger::process().releaseSendCopy(pending_.front().bytes.size());
    pending_.pop_front();
  }
  return llvm::Error::success();
}

} // namespace partita::rt
