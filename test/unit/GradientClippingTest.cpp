// The grad_norm program add-optimizer builds and the clip coefficient
// against closed forms.
#include "runtime/train/GradientClipping.h"
#include "OptimizerPrograms.h"
#include "runtime/core/Device.h"
#include <gtest/gtest.h>
#include <cmath>

using namespace partita;
using namespace partita::rt;

namespace {

/// The norm of gradients a (f32[2]) and b (f32[n]) by the grad_norm program.
double normOf(std::vector<float> a, std::vector<float> b) {
  int64_t n = static_cast<int64_t>(b.size());
  std::string text = R"(graph @g(%x: f32[2], %y: f32[)" + std::to_string(n) + R"(]) opset 17 {
  %a = Weight() {name = "a"} : f32[2]
  %b = Weight() {name = "b"} : f32[)" + std::to_string(n) + R"(]
  %grad.a = Mul(%x, %a) : f32[2]
  %grad.b = Mul(%y, %b) : f32[)" + std::to_string(n) + R"(]
  return %grad.a, %grad.b
})";
  auto programs = test::optimizerPrograms(text);
  EXPECT_TRUE(programs.count("grad_norm"));
  if (!programs.count("grad_norm"))
    return NAN;
  CpuDevice device;
  auto program = Program::load(*programs["grad_norm"], device);
  EXPECT_TRUE(static_cast<bool>(program)) << llvm::toString(program.takeError());
  if (!program)
    return NAN;
  TensorView av{DType::F32, {2}, a.data()}, bv{DType::F32, {n}, b.data()};
  auto norm = globalGradientNorm(**program, {"a", "b"}, {&av, &bv}, {av, bv});
  EXPECT_TRUE(static_cast<bool>(norm)) << llvm::toString(norm.takeError());
  return norm ? *norm : NAN;
}

} // namespace

TEST(GradientClipping, NormOverEveryGradient) {
  // sqrt(9 + 16 + 144) = 13.
  EXPECT_DOUBLE_EQ(normOf({3, 4}, {12}), 13.0);
}

TEST(GradientClipping, LargeGradients) {
  // 2^18 ones (and 0, 0) have norm 2^9; an f32 sum of ones is exact there.
  EXPECT_DOUBLE_EQ(normOf({0, 0}, std::vector<float>(1 << 18, 1.0f)), 512.0);
}

TEST(GradientClipping, NonFiniteGradientsGiveANonFiniteNorm) {
  EXPECT_FALSE(std::isfinite(normOf({1, INFINITY}, {0})));
}

TEST(GradientClipping, CoefficientClipsOnlyAboveTheMaximum) {
  EXPECT_EQ(clipCoefficient(0.5, 1.0), 1.0);
  EXPECT_DOUBLE_EQ(clipCoefficient(4.0, 1.0), 1.0 / (4.0 + 1e-6));
  EXPECT_NEAR(clipCoefficient(10.0, 2.5) * 10.0, 2.5, 1e-6);
}
