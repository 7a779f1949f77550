// Gradient sums over micro-batches from a real program (one replica: the
// program has no reductions, so every micro-batch's gradient is summed here).
#include "runtime/train/GradientAccumulator.h"
#include "compiler/ir/Parser.h"
#include "runtime/core/DeviceRegistry.h"
#include "runtime/core/DeviceTensor.h"
#include <gtest/gtest.h>

using namespace partita;
using namespace partita::rt;

class GradientAccumulatorOn : public testing::TestWithParam<const char *> {};

// On cpu-strict the sums are device memory the test cannot read but by a copy.
TEST_P(GradientAccumulatorOn, SumsEveryMicroBatchAndTheLoss) {
  // loss = sum(x), grad.w = 2x: over x = 1, 2, 3 the sums are 6 and 12.
  auto g = parseGraph(R"(graph @g(%x: f32[2]) opset 17 {
  %loss = ReduceSum(%x) {keepdims = 0} : f32[]
  %two = Constant() {value = dense<f32[]>[2.0]} : f32[]
  %grad.w = Mul(%x, %two) : f32[2]
  return %loss, %grad.w
})",
                      "<test>");
  ASSERT_TRUE(static_cast<bool>(g)) << llvm::toString(g.takeError());
  auto made = DeviceRegistry::get().create(GetParam());
  ASSERT_TRUE(static_cast<bool>(made));
  Device &device = **made;
  auto p = Program::load(**g, device);
  ASSERT_TRUE(static_cast<bool>(p)) << llvm::toString(p.takeError());
  auto created = GradientAccumulator::create(device, p->get(), **p, {"grad.w"}, {2}, 3);
  ASSERT_TRUE(static_cast<bool>(created)) << llvm::toString(created.takeError());
  GradientAccumulator &acc = **created;
  for (int step = 0; step < 2; ++step) { // the second step starts afresh
    for (int64_t micro = 0; micro < 3; ++micro) {
      acc.beforeForward(micro);
      acc.beforeBackward(micro);
      Tensor x = Tensor::fromDoubles(DType::F32, {2}, {double(micro + 1), double(10 * (micro + 1))});
      auto onDevice = DeviceTensor::upload(device, x, MemoryCategory::Activations, "x");
      ASSERT_TRUE(static_cast<bool>(onDevice));
      llvm::StringMap<TensorView> feeds;
      feeds["x"] = onDevice->view();
      auto outs = (*p)->run(feeds);
      ASSERT_TRUE(static_cast<bool>(outs)) << llvm::toString(outs.takeError());
      acc.afterLoss(micro, *outs);
      acc.afterGradients(micro, *outs);
    }
    EXPECT_EQ(acc.lossSum(), 66.0);
    EXPECT_EQ(download(device, acc.gradient(0)).toDoubles(), (std::vector<double>{12, 120}));
  }
}

INSTANTIATE_TEST_SUITE_P(Devices, GradientAccumulatorOn, testing::Values("cpu", "cpu-strict"));
