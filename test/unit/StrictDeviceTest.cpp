// The strict CPU device (--device cpu-strict): its device addresses fault when
// the host touches them; kernels and copies reach the bytes through
// kernelAddress. The death tests are the mode failing as it must: a host read
// of a device buffer (a program's output, as runtime code would read a loss)
// and host memory handed over as device memory both stop the process.
#include "MockDevice.h"
#include "compiler/ir/Parser.h"
#include "runtime/core/DeviceRegistry.h"
#include "runtime/core/DeviceTensor.h"
#include "runtime/executor/Program.h"
#include <condition_variable>
#include <gtest/gtest.h>
#include <mutex>
#include <thread>

using namespace partita;
using namespace partita::rt;

namespace {

std::unique_ptr<Device> strictDevice() {
  auto made = DeviceRegistry::get().create("cpu-strict");
  EXPECT_TRUE(static_cast<bool>(made));
  return made ? std::move(*made) : nullptr;
}

float hostRead(const void *p) { return *static_cast<const volatile float *>(p); }

} // namespace

TEST(StrictDevice, CopiesAndKernelAddressesReachTheBytes) {
  auto device = strictDevice();
  ASSERT_FALSE(device->sharesHostMemory());
  float in[3] = {1.5f, -2.0f, 7.25f}, out[3] = {};
  void *a = device->allocate(sizeof in), *b = device->allocate(sizeof in);
  ASSERT_TRUE(a && b);
  EXPECT_NE(device->kernelAddress(a), a); // the kernels' alias is another address
  device->copyFromHost(a, in, sizeof in);
  device->copyOnDevice(b, a, sizeof in);
  device->copyToHost(out, b, sizeof out);
  EXPECT_EQ(std::vector<float>(out, out + 3), std::vector<float>(in, in + 3));
  // An address inside an allocation (the executor's arena offsets) translates by its offset.
  EXPECT_EQ(static_cast<const float *>(device->kernelAddress(device->offset(b, 8)))[0], 7.25f);
  EXPECT_EQ(downloadScalar(*device, device->offset(a, 4)), -2.0f);
  device->deallocate(a);
  device->deallocate(b);
}

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define PARTITA_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define PARTITA_ASAN 1
#endif

TEST(StrictDeviceDeathTest, AHostReadOfAProgramsOutputFaults) {
#ifdef PARTITA_ASAN
  GTEST_SKIP() << "AddressSanitizer reports the fault this test makes (scripts/sanitize.sh fails on any report)";
#endif
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  auto g = parseGraph(R"(graph @g(%x: f32[2]) opset 17 {
  %loss = ReduceSum(%x) {keepdims = 0} : f32[]
  return %loss
})",
                      "<test>");
  ASSERT_TRUE(static_cast<bool>(g));
  auto device = strictDevice();
  auto p = Program::load(**g, *device);
  ASSERT_TRUE(static_cast<bool>(p)) << llvm::toString(p.takeError());
  auto x = DeviceTensor::upload(*device, Tensor::fromDoubles(DType::F32, {2}, {3, 4}), MemoryCategory::Activations, "x");
  ASSERT_TRUE(static_cast<bool>(x));
  auto outs = (*p)->run({{"x", x->view()}});
  ASSERT_TRUE(static_cast<bool>(outs)) << llvm::toString(outs.takeError());
  EXPECT_EQ(downloadScalar(*device, (*outs)[0].data), 7.0f); // through a copy: the sum
  EXPECT_DEATH(hostRead((*outs)[0].data), "");                // directly: a fault
}

TEST(StrictDeviceDeathTest, HostMemoryHandedToAKernelIsStopped) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  auto device = strictDevice();
  float host = 1.0f;
  EXPECT_DEATH(device->kernelAddress(&host), "cpu-strict: .* is not memory of this device");
  float out = 0;
  EXPECT_DEATH(device->copyToHost(&out, &host, sizeof out), "is not memory of this device");
}

// Device::fill: a memset on cpu and cpu-strict, the contract's default (host
// chunks of a megabyte, copied) on the mock device; each sets exactly the
// bytes asked for, across chunk boundaries, and no byte around them.
TEST(DeviceFill, SetsExactlyTheBytesAskedForOnEveryDevice) {
  std::vector<std::unique_ptr<Device>> devices;
  for (const char *name : {"cpu", "cpu-strict"})
    devices.push_back(std::move(*DeviceRegistry::get().create(name)));
  devices.push_back(std::make_unique<test::MockDevice>());
  const size_t total = (size_t(3) << 20) + 7, from = 5, count = (size_t(2) << 20) + 1;
  for (auto &device : devices) {
    std::vector<uint8_t> host(total, 0x11);
    void *at = device->allocate(total);
    ASSERT_TRUE(at);
    device->copyFromHost(at, host.data(), total);
    device->fill(device->offset(at, from), 0xAB, count);
    device->copyToHost(host.data(), at, total);
    for (size_t i = 0; i < total; ++i)
      ASSERT_EQ(host[i], i >= from && i < from + count ? 0xAB : 0x11) << device->name() << " byte " << i;
    device->deallocate(at);
  }
}

// The strict device's streams and events (Device.h's contract): an event is a
// position in a stream's queue. A kernel held back by a latch stands for
// long-running work: until it is released, an event recorded after it is
// pending and a stream waiting for that event is not drained; releasing it
// completes both. An event never recorded is complete.
TEST(StrictDevice, EventsAndStreamWaitsFollowTheQueue) {
  auto device = strictDevice();
  std::mutex mu;
  std::condition_variable cv;
  bool released = false;
  auto before = device->createEvent();
  EXPECT_TRUE(before->query()); // never recorded
  before->record(device->defaultStream());
  ASSERT_FALSE(device->launch([&]() {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return released; });
    return llvm::Error::success();
  }));
  auto after = device->createEvent();
  after->record(device->defaultStream());
  auto other = device->createStream();
  other->wait(*after);
  auto onOther = device->createEvent(); // behind the wait on the other stream
  onOther->record(*other);
  EXPECT_TRUE(before->query()); // recorded before the held kernel
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(after->query());
  EXPECT_FALSE(device->defaultStream().query());
  EXPECT_FALSE(other->query()); // waits behind the held kernel
  EXPECT_FALSE(onOther->query());
  {
    std::lock_guard<std::mutex> lock(mu);
    released = true;
  }
  cv.notify_all();
  after->synchronize();
  EXPECT_TRUE(after->query());
  onOther->synchronize();
  EXPECT_TRUE(other->query());
  EXPECT_FALSE(device->finishWork());
}

// A communicating kernel's ready event: a kernel launched before it must
// have written what it reads. Here a held kernel fills a buffer; the event
// recorded after it completes only once the bytes are there, and waiting for
// it (what Communicator::follow does on MPI) sees them.
TEST(StrictDevice, WaitingForAnEventSeesTheKernelsBeforeIt) {
  auto device = strictDevice();
  void *buffer = device->allocate(sizeof(float));
  ASSERT_TRUE(buffer);
  float *bytes = static_cast<float *>(device->kernelAddress(buffer));
  ASSERT_FALSE(device->launch([bytes]() {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    *bytes = 42.0f;
    return llvm::Error::success();
  }));
  auto ready = device->createEvent();
  ready->record(device->defaultStream());
  ready->synchronize();
  EXPECT_EQ(*bytes, 42.0f); // through the kernels' alias, as a device-aware collective reads it
  device->deallocate(buffer);
}

// Program::releaseWeight hands a weight over (TrainState::adopt takes the
// training state's parameters so): the program goes on computing on it in
// place, no longer charges it, and does not free it; DeviceTensor::adopt
// charges and frees it instead. Handing it over twice, or a weight the
// program lacks, is an error naming it.
TEST(StrictDevice, AProgramHandsAWeightOver) {
  auto g = parseGraph(R"(graph @g(%x: f32[2]) opset 17 {
  %w = Weight() {name = "w"} : f32[2]
  %y = Mul(%x, %w) : f32[2]
  return %y
})",
                      "<test>");
  ASSERT_TRUE(static_cast<bool>(g));
  auto device = strictDevice();
  auto params = [&] { return device->ledger().current()[static_cast<size_t>(MemoryCategory::Parameters)]; };
  auto p = Program::load(**g, *device, nullptr, /*readWeights=*/false); // its bytes copied in below
  ASSERT_TRUE(static_cast<bool>(p)) << llvm::toString(p.takeError());
  const size_t held = params();
  const float w[2] = {2.0f, -3.0f};
  device->copyFromHost((*p)->staticTensor("w")->data, w, sizeof w);
  auto view = (*p)->releaseWeight("w");
  ASSERT_TRUE(static_cast<bool>(view)) << llvm::toString(view.takeError());
  EXPECT_EQ(view->data, (*p)->staticTensor("w")->data);
  EXPECT_EQ(params(), held - sizeof w); // the program no longer charges it
  EXPECT_EQ(llvm::toString((*p)->releaseWeight("w").takeError()), "weight 'w' was handed over already");
  EXPECT_EQ(llvm::toString((*p)->releaseWeight("v").takeError()), "the program has no weight 'v' to hand over");
  {
    DeviceTensor owned = DeviceTensor::adopt(*device, *view, MemoryCategory::Parameters);
    EXPECT_EQ(params(), held);
    auto x = DeviceTensor::upload(*device, Tensor::fromDoubles(DType::F32, {2}, {1, 1}), MemoryCategory::Activations, "x");
    ASSERT_TRUE(static_cast<bool>(x));
    auto outs = (*p)->run({{"x", x->view()}});
    ASSERT_TRUE(static_cast<bool>(outs)) << llvm::toString(outs.takeError());
    EXPECT_EQ(downloadScalar(*device, device->offset((*outs)[0].data, 4)), -3.0f); // computed on it in place
  }
  EXPECT_EQ(params(), held - sizeof w); // freed with its new owner
  p->reset(); // and not again by the program (cpu-strict stops a second free of an address)
}
