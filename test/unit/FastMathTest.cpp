//===- FastMathTest.cpp - fastExp / fastTanh against libm -------------------===//
#include "runtime/cpu/FastMath.h"
#include <gtest/gtest.h>
#include <cfloat>
#include <cmath>
#include <limits>
#include <vector>

using namespace partita::rt::cpu;

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
// FastMath.h claims ~2 ulp; one float ulp is at most FLT_EPSILON relative.
constexpr double kRelTol = 2 * FLT_EPSILON;

/// Dense steps over [lo, hi] plus both ends.
std::vector<float> sweep(float lo, float hi, int steps) {
  std::vector<float> xs;
  for (int i = 0; i <= steps; ++i)
    xs.push_back(lo + (hi - lo) * static_cast<float>(i) / static_cast<float>(steps));
  xs.push_back(hi);
  return xs;
}

} // namespace

TEST(FastMath, ExpMatchesLibmOverTheNormalRange) {
  // From where exp(x) is a comfortably normal float to just under FLT_MAX.
  for (float x : sweep(-86.9f, 88.72f, 400000)) {
    double want = std::exp(static_cast<double>(x));
    float got = fastExp(x);
    ASSERT_LE(std::fabs(got - want), kRelTol * want) << "x = " << x;
  }
  for (float x : {0.0f, -0.0f, 1.0f, -1.0f, 1e-30f, -1e-30f, 88.7f, 88.72f, -86.9f})
    EXPECT_LE(std::fabs(fastExp(x) - std::exp(static_cast<double>(x))), kRelTol * std::exp(static_cast<double>(x)))
        << "x = " << x;
}

TEST(FastMath, ExpOverflowsToInfAndUnderflowsToZero) {
  for (float x : {88.73f, 89.0f, 100.0f, 1e30f, FLT_MAX, kInf})
    EXPECT_EQ(fastExp(x), kInf) << "x = " << x;
  for (float x : {-87.5f, -100.0f, -1e30f, -FLT_MAX, -kInf})
    EXPECT_EQ(fastExp(x), 0.0f) << "x = " << x;
  // Between -87.5 and -86.9 results near FLT_MIN are kept or flushed to 0.
  for (float x : sweep(-87.5f, -86.9f, 1000)) {
    float got = fastExp(x);
    EXPECT_GE(got, 0.0f) << "x = " << x;
    EXPECT_LE(got, 2 * FLT_MIN) << "x = " << x;
  }
}

TEST(FastMath, ExpOfNaNIsNaN) {
  EXPECT_TRUE(std::isnan(fastExp(kNaN)));
  EXPECT_TRUE(std::isnan(fastExp(-kNaN)));
}

TEST(FastMath, TanhMatchesLibm) {
  // 1 - exp(-2|x|) cancels near 0: the error is absolute there, relative
  // (2 ulp) where |tanh| approaches 1.
  for (float x : sweep(-20.0f, 20.0f, 400000)) {
    double want = std::tanh(static_cast<double>(x));
    float got = fastTanh(x);
    ASSERT_LE(std::fabs(got - want), 1.5 * kRelTol * std::fmax(std::fabs(want), 1.0)) << "x = " << x;
  }
  for (float x : {1e-30f, -1e-30f, 1e-6f, -1e-6f, 0.0f})
    EXPECT_LE(std::fabs(fastTanh(x) - std::tanh(x)), 1.5 * kRelTol) << "x = " << x;
  for (float x : {1e30f, 89.0f, kInf})
    EXPECT_EQ(fastTanh(x), 1.0f) << "x = " << x;
  for (float x : {-1e30f, -89.0f, -kInf})
    EXPECT_EQ(fastTanh(x), -1.0f) << "x = " << x;
  EXPECT_TRUE(std::isnan(fastTanh(kNaN)));
}

TEST(FastMath, SigmoidSaturatesWithoutNaN) {
  EXPECT_EQ(sigmoid(-1e30f), 0.0f);
  EXPECT_EQ(sigmoid(1e30f), 1.0f);
  EXPECT_EQ(sigmoid(-kInf), 0.0f);
  EXPECT_EQ(sigmoid(kInf), 1.0f);
  EXPECT_TRUE(std::isnan(sigmoid(kNaN)));
  EXPECT_NEAR(sigmoid(0.0f), 0.5f, 1e-7f);
}
