// The device seam: kernels registered by device type from outside the
// registry (the mock device's, in MockDevice.cpp), a program run on a device
// whose addresses are handles (the executor offsets into its arena only
// through the device), and the trivial streams and events of the CPU.
#include "MockDevice.h"
#include "compiler/ir/Parser.h"
#include "runtime/core/DeviceRegistry.h"
#include "runtime/executor/Program.h"
#include "runtime/kernels/KernelRegistry.h"
#include <gtest/gtest.h>
#include <algorithm>

using namespace partita;
using partita::test::kMockDevice;
using partita::test::MockDevice;

TEST(DeviceSeam, BackendsRegisterTheirKernelsByDeviceType) {
  const rt::KernelRegistry &r = rt::KernelRegistry::get();
  std::vector<std::string> types = r.deviceTypes();
  EXPECT_TRUE(std::count(types.begin(), types.end(), "cpu"));
  EXPECT_TRUE(std::count(types.begin(), types.end(), "mock"));
  EXPECT_EQ(r.ops(kMockDevice), (std::vector<std::string>{"Add", "MatMul", "Mul", "Relu"}));
  EXPECT_TRUE(r.find("Softmax", rt::kCpuDevice));
  EXPECT_FALSE(r.find("Softmax", kMockDevice));
  EXPECT_FALSE(r.find("MatMul", rt::DeviceType{"tpu"})); // nothing registered it
  EXPECT_TRUE(r.ops(rt::DeviceType{"tpu"}).empty());
  EXPECT_FALSE(r.clusterFusion(kMockDevice));
  EXPECT_TRUE(r.clusterFusion(rt::kCpuDevice));
}

namespace {

/// x[2,3] @ w[3,4] -> relu -> reshape [4,2] -> + b -> squared; returns
/// z and h. r and y are live together: two arena buffers, one at an offset.
const char *kProgram = "graph @g(%x: f32[2,3]) opset 17 {\n"
                       "  %w = Constant() {value = dense<f32[3,4]>[1, -1, 2, 0, 0.5, 1, -2, 1, -1, 3, 1, 2]} : f32[3,4]\n"
                       "  %h = MatMul(%x, %w) : f32[2,4]\n"
                       "  %r = Relu(%h) : f32[2,4]\n"
                       "  %s = Constant() {value = dense<i64[2]>[4, 2]} : i64[2]\n"
                       "  %v = Reshape(%r, %s) : f32[4,2]\n"
                       "  %b = Constant() {value = dense<f32[4,2]>[1, 2, 3, 4, 5, 6, 7, 8]} : f32[4,2]\n"
                       "  %y = Add(%v, %b) : f32[4,2]\n"
                       "  %z = Mul(%y, %y) : f32[4,2]\n"
                       "  return %z, %h\n}\n";

/// The same on the host.
void expected(const std::vector<float> &x, std::vector<float> &z, std::vector<float> &h) {
  const float w[12] = {1, -1, 2, 0, 0.5f, 1, -2, 1, -1, 3, 1, 2};
  h.assign(8, 0);
  z.assign(8, 0);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 4; ++j)
      for (int p = 0; p < 3; ++p)
        h[i * 4 + j] += x[i * 3 + p] * w[p * 4 + j];
  for (int k = 0; k < 8; ++k) {
    float y = std::max(h[k], 0.0f) + static_cast<float>(k + 1);
    z[k] = y * y;
  }
}

} // namespace

TEST(DeviceSeam, ProgramRunsOnADeviceWithoutHostAddresses) {
  auto g = parseGraph(kProgram, "mock.pir");
  ASSERT_TRUE(static_cast<bool>(g)) << llvm::toString(g.takeError());
  MockDevice device;
  void *x = device.allocate(6 * sizeof(float));
  {
    auto program = rt::Program::load(**g, device);
    ASSERT_TRUE(static_cast<bool>(program)) << llvm::toString(program.takeError());
    EXPECT_GE((*program)->stats().arenaBytes, 2 * 8 * sizeof(float)); // r and y apart
    for (std::vector<float> host : {std::vector<float>{1, 2, 3, -4, 5, -6}, std::vector<float>{-1, 0, 2, 3, 1, 1}}) {
      device.copyFromHost(x, host.data(), host.size() * sizeof(float));
      llvm::StringMap<rt::TensorView> feeds;
      feeds["x"] = rt::TensorView{DType::F32, {2, 3}, x};
      auto outs = (*program)->run(feeds);
      ASSERT_TRUE(static_cast<bool>(outs)) << llvm::toString(outs.takeError());
      std::vector<float> z(8), h(8), wantZ, wantH;
      device.copyToHost(z.data(), (*outs)[0].data, z.size() * sizeof(float));
      device.copyToHost(h.data(), (*outs)[1].data, h.size() * sizeof(float));
      expected(host, wantZ, wantH);
      EXPECT_EQ(z, wantZ);
      EXPECT_EQ(h, wantH);
    }
  }
  EXPECT_EQ(device.liveAllocations(), 1u) << "the program did not free all it allocated";
  device.deallocate(x);
}

TEST(DeviceSeam, AnOpWithoutAKernelOnTheDeviceFailsAtLoadNamingTheDevice) {
  auto g = parseGraph("graph @g(%x: f32[2,3]) opset 17 {\n"
                      "  %y = Softmax(%x) {axis = 1} : f32[2,3]\n  return %y\n}\n",
                      "softmax.pir");
  ASSERT_TRUE(static_cast<bool>(g)) << llvm::toString(g.takeError());
  MockDevice device;
  auto program = rt::Program::load(**g, device);
  ASSERT_FALSE(static_cast<bool>(program));
  std::string msg = llvm::toString(program.takeError());
  EXPECT_NE(msg.find("no mock kernel for this operator"), std::string::npos) << msg;
}

TEST(DeviceSeam, CpuStreamsAndEventsCompleteWhenTheCallReturns) {
  rt::CpuDevice device;
  std::unique_ptr<rt::Stream> comm = device.createStream();
  std::unique_ptr<rt::Event> computed = device.createEvent();
  ASSERT_TRUE(comm && computed);
  EXPECT_NE(comm.get(), &device.defaultStream());
  EXPECT_TRUE(computed->query()); // never recorded
  computed->record(device.defaultStream());
  EXPECT_TRUE(computed->query());
  comm->wait(*computed);
  EXPECT_TRUE(comm->query());
  computed->synchronize();
  comm->synchronize();
  device.synchronize();
  EXPECT_TRUE(device.defaultStream().query());
}

// Devices come from the registry by name, as the tools take them (--device):
// cpu is always there; another backend adds its own entry (CUDA does), and a
// name nobody registered is an error that lists the ones that were.
TEST(DeviceSeam, DevicesAreMadeByName) {
  auto cpu = rt::DeviceRegistry::get().create("cpu");
  ASSERT_TRUE(static_cast<bool>(cpu)) << llvm::toString(cpu.takeError());
  EXPECT_EQ((*cpu)->kind(), rt::kCpuDevice);
  rt::DeviceRegistry registry = rt::DeviceRegistry::get(); // a copy: the process's stays as it is
  registry.add({"mock", "a test device", test::kMockDevice,
                []() -> llvm::Expected<std::unique_ptr<rt::Device>> { return std::make_unique<test::MockDevice>(); }});
  auto mock = registry.create("mock");
  ASSERT_TRUE(static_cast<bool>(mock)) << llvm::toString(mock.takeError());
  EXPECT_EQ((*mock)->kind(), test::kMockDevice);
  auto missing = registry.create("tpu");
  ASSERT_FALSE(static_cast<bool>(missing));
#if PARTITA_HAVE_CUDA
  const char *others = "cpu, cpu-strict, cuda, mock";
#else
  const char *others = "cpu, cpu-strict, mock";
#endif
  EXPECT_EQ(llvm::toString(missing.takeError()),
            std::string("--device tpu: no such device in this build (it has: ") + others + ")");
}
