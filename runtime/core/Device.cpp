//===- Device.cpp - the trivial streams and events of a synchronous device -===//
//
// On a device whose work is done when the call returns, every stream is
// always drained and every event always complete.
//===----------------------------------------------------------------------===//
#include "runtime/core/Device.h"
#include <algorithm>
#include <vector>

namespace partita::rt {

namespace {
class SynchronousStream final : public Stream {
public:
  void wait(const Event &) override {}
  void synchronize() override {}
  bool query() const override { return true; }
};

class SynchronousEvent final : public Event {
public:
  void record(Stream &) override {}
  void synchronize() const override {}
  bool query() const override { return true; }
};
} // namespace

Stream &Device::defaultStream() {
  static SynchronousStream stream; // stateless: one serves every synchronous device
  return stream;
}

std::unique_ptr<Stream> Device::createStream() { return std::make_unique<SynchronousStream>(); }
std::unique_ptr<Event> Device::createEvent() { return std::make_unique<SynchronousEvent>(); }

void Device::fill(void *dst, uint8_t value, size_t bytes) {
  constexpr size_t kChunk = size_t(1) << 20;
  std::vector<uint8_t> chunk(std::min(bytes, kChunk), value);
  for (size_t at = 0; at < bytes; at += kChunk)
    copyFromHost(offset(dst, at), chunk.data(), std::min(kChunk, bytes - at));
}

} // namespace partita::rt
