// Gradient sums over micro-batches from a real program (one replica: the
// program has no reductions, so every micro-batch's gradient is summed here).
#include "runtime/train/GradientAccumulator.h"
#include "compiler/ir/Parser.h"
#include "runtime/core/Device.h"
#include <gtest/gtest.h>

using namespace partita;
using namespace partita::rt;

TEST(GradientAccumulator, SumsEveryMicroBatchAndTheLoss) {
  // loss = sum(x), grad.w = 2x: over x = 1, 2, 3 the sums are 6 and 12.
  auto g = parseGraph(R"(graph @g(%x: f32[2]) opset 17 {
  %loss = ReduceSum(%x) {keepdims = 0} : f32[]
  %two = Constant() {value = dense<f32[]>[2.0]} : f32[]
  %grad.w = Mul(%x, %two) : f32[2]
  return %loss, %grad.w
})",
                      "<test>");
  ASSERT_TRUE(static_cast<bool>(g)) << llvm::toString(g.takeError());
  CpuDevice device;
  auto p = Program::load(**g, device);
  ASSERT_TRUE(static_cast<bool>(p)) << llvm::toString(p.takeError());
  auto created = GradientAccumulator::create(p->get(), **p, {"grad.w"}, {2}, 3);
  ASSERT_TRUE(static_cast<bool>(created)) << llvm::toString(created.takeError());
  GradientAccumulator &acc = **created;
  for (int step = 0; step < 2; ++step) { // the second step starts afresh
    for (int64_t micro = 0; micro < 3; ++micro) {
      acc.beforeForward(micro);
      acc.beforeBackward(micro);
      std::vector<float> x = {float(micro + 1), float(10 * (micro + 1))};
      llvm::StringMap<TensorView> feeds;
      feeds["x"] = TensorView{DType::F32, {2}, x.data()};
      auto outs = (*p)->run(feeds);
      ASSERT_TRUE(static_cast<bool>(outs)) << llvm::toString(outs.takeError());
      acc.afterLoss(micro, *outs);
      acc.afterGradients(micro, *outs);
    }
    EXPECT_EQ(acc.lossSum(), 66.0);
    EXPECT_EQ(acc.gradient(0).as<float>()[0], 12.0f);
    EXPECT_EQ(acc.gradient(0).as<float>()[1], 120.0f);
  }
}
