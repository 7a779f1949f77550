// The global gradient norm and the clip coefficient against closed forms.
#include "runtime/train/GradientClipping.h"
#include <gtest/gtest.h>
#include <cmath>
#include <numeric>

using namespace partita::rt;

TEST(GradientClipping, NormOverEveryGradient) {
  std::vector<float> a = {3, 4}, b = {12};
  // sqrt(9 + 16 + 144) = 13, scaled by 0.5.
  auto norm = globalGradientNorm({{a.data(), 2, true}, {b.data(), 1, false}}, nullptr, 0.5);
  ASSERT_TRUE(static_cast<bool>(norm));
  EXPECT_DOUBLE_EQ(*norm, 6.5);
}

TEST(GradientClipping, LargeGradientsSumInDouble) {
  // Past the size where the sum runs in parallel: n ones have norm sqrt(n).
  std::vector<float> ones(1 << 18, 1.0f);
  auto norm = globalGradientNorm({{ones.data(), static_cast<int64_t>(ones.size()), false}}, nullptr, 1.0);
  ASSERT_TRUE(static_cast<bool>(norm));
  EXPECT_DOUBLE_EQ(*norm, 512.0);
}

TEST(GradientClipping, NonFiniteGradientsGiveANonFiniteNorm) {
  std::vector<float> a = {1, INFINITY};
  auto norm = globalGradientNorm({{a.data(), 2, false}}, nullptr, 1.0);
  ASSERT_TRUE(static_cast<bool>(norm));
  EXPECT_FALSE(std::isfinite(*norm));
}

TEST(GradientClipping, CoefficientClipsOnlyAboveTheMaximum) {
  EXPECT_EQ(clipCoefficient(0.5, 1.0), 1.0);
  EXPECT_DOUBLE_EQ(clipCoefficient(4.0, 1.0), 1.0 / (4.0 + 1e-6));
  EXPECT_NEAR(clipCoefficient(10.0, 2.5) * 10.0, 2.5, 1e-6);
}
