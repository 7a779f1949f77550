//===- Device.cpp - the trivial streams and events of a synchronous device -===//
//
// On a device whose work is done when the call returns, every stream is
// always drained and every event always complete.
//===----------------------------------------------------------------------===//
#include "runtime/core/Device.h"

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
  void synchronize() override {}
  bool query() const override { return true; }
};
} // namespace

Stream &Device::defaultStream() {
  static SynchronousStream stream; // stateless: one serves every synchronous device
  return stream;
}

std::unique_ptr<Stream> Device::createStream() { return std::make_unique<SynchronousStream>(); }
std::unique_ptr<Event> Device::createEvent() { return std::make_unique<SynchronousEvent>(); }

} // namespace partita::rt
