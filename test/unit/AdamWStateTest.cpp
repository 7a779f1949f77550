// Two AdamW steps through add-optimizer's step program against
// torch.optim.AdamW's update written out in double precision.
#include "runtime/train/AdamWState.h"
#include "OptimizerPrograms.h"
#include "runtime/core/Device.h"
#include "runtime/core/DeviceTensor.h"
#include <gtest/gtest.h>
#include <cmath>

using namespace partita;
using namespace partita::rt;

TEST(AdamWState, TwoStepsMatchTheClosedForm) {
  AdamWOptions o;
  o.beta1 = 0.8;
  o.beta2 = 0.95;
  o.eps = 1e-6;
  o.weightDecay = 0.1;
  auto programs = test::optimizerPrograms(R"(graph @g(%x: f32[3]) opset 17 {
  %w = Weight() {name = "w"} : f32[3]
  %grad.w = Mul(%x, %w) : f32[3]
  return %grad.w
})",
                                          o);
  ASSERT_TRUE(programs.count("step"));
  CpuDevice device;
  auto step = Program::load(*programs["step"], device);
  ASSERT_TRUE(static_cast<bool>(step)) << llvm::toString(step.takeError());
  std::vector<float> p = {1.0f, -2.0f, 0.5f};
  TensorView pv{DType::F32, {3}, p.data()};
  std::vector<DeviceTensor> moments;
  auto adam = AdamWState::create((*step)->device(), **step, {"w"}, {&pv}, o,
                                 [&](size_t, bool, const TensorType &t) -> llvm::Expected<TensorView> {
                                   auto m = DeviceTensor::zeros(device, t.dtype, t.shape, MemoryCategory::OptimizerStates, "m");
                                   if (!m)
                                     return m.takeError();
                                   moments.push_back(std::move(*m));
                                   return moments.back().view();
                                 });
  ASSERT_TRUE(static_cast<bool>(adam)) << llvm::toString(adam.takeError());

  std::vector<double> ref(p.begin(), p.end()), m(3, 0), v(3, 0);
  std::vector<std::vector<float>> grads = {{0.5f, -1.0f, 2.0f}, {-0.25f, 3.0f, 0.0f}};
  // The summed gradients' factor (1 / micro-batches times the clip
  // coefficient), different per step: AdamW is invariant to one constant
  // factor (but for eps), not to a changing one.
  const double lr = 0.01, scales[] = {0.5, 4.0};
  for (int t = 1; t <= 2; ++t) {
    std::vector<float> gr = grads[t - 1];
    double scale = scales[t - 1];
    ASSERT_FALSE(llvm::errorToBool(adam->apply(t, static_cast<float>(lr), static_cast<float>(scale), {TensorView{DType::F32, {3}, gr.data()}})));
    for (int i = 0; i < 3; ++i) {
      double gi = scale * gr[i];
      ref[i] *= 1 - lr * o.weightDecay;
      m[i] = o.beta1 * m[i] + (1 - o.beta1) * gi;
      v[i] = o.beta2 * v[i] + (1 - o.beta2) * gi * gi;
      double mhat = m[i] / (1 - std::pow(o.beta1, t)), vhat = v[i] / (1 - std::pow(o.beta2, t));
      ref[i] -= lr * mhat / (std::sqrt(vhat) + o.eps);
    }
    for (int i = 0; i < 3; ++i)
      EXPECT_NEAR(p[i], ref[i], 1e-6) << "step " << t << " element " << i;
  }
}
