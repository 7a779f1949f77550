//===- ElementMathTest.cpp - the shared per-element math against float64 ---===//
//
// runtime/kernels/ElementMath.h is what every device's kernels compute: the
// op tables and AdamW are checked here against references written
// independently in double precision (libm, torch.optim.AdamW's formula).
//===----------------------------------------------------------------------===//
#include "runtime/kernels/ElementMath.h"
#include <gtest/gtest.h>
#include <cmath>
#include <random>
#include <string>
#include <vector>

using namespace partita::rt;

namespace {

struct Reference {
  const char *name;
  double (*f)(double);
};

/// Each unary op's mathematical definition, in double.
const Reference kUnary[] = {
    {"Neg", [](double x) { return -x; }},
    {"Abs", [](double x) { return std::fabs(x); }},
    {"Sqrt", [](double x) { return std::sqrt(x); }},
    {"Reciprocal", [](double x) { return 1 / x; }},
    {"Exp", [](double x) { return std::exp(x); }},
    {"Log", [](double x) { return std::log(x); }},
    {"Erf", [](double x) { return std::erf(x); }},
    {"Tanh", [](double x) { return std::tanh(x); }},
    {"Sin", [](double x) { return std::sin(x); }},
    {"Cos", [](double x) { return std::cos(x); }},
    {"Floor", [](double x) { return std::floor(x); }},
    {"Ceil", [](double x) { return std::ceil(x); }},
    {"Sigmoid", [](double x) { return 1 / (1 + std::exp(-x)); }},
    {"Relu", [](double x) { return x > 0 ? x : 0; }},
    {"partita.Gelu", [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }},
    {"partita.FastGelu",
     [](double x) { return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x))); }},
};

double unaryReference(const std::string &name, double x) {
  for (const Reference &r : kUnary)
    if (name == r.name)
      return r.f(x);
  ADD_FAILURE() << "no reference for " << name;
  return 0;
}

} // namespace

TEST(ElementMath, EveryUnaryOpMatchesItsDefinition) {
  std::vector<float> xs;
  for (int i = -400; i <= 400; ++i)
    xs.push_back(static_cast<float>(i) / 50.0f + 0.0037f); // [-8, 8], off the integers
  int ops = 0;
#define CHECK_UNARY(name, id, expr)                                                                                \
  ++ops;                                                                                                           \
  for (float x : xs) {                                                                                             \
    if ((std::string(name) == "Sqrt" || std::string(name) == "Log") && x <= 0)                                     \
      continue;                                                                                                    \
    double want = unaryReference(name, x);                                                                         \
    float got = (expr);                                                                                            \
    EXPECT_NEAR(got, want, 1e-6 * std::max(1.0, std::fabs(want))) << name << "(" << x << ")";                    \
  }
  PARTITA_UNARY_OPS(CHECK_UNARY)
#undef CHECK_UNARY
  EXPECT_EQ(ops, static_cast<int>(std::size(kUnary))); // every op of the table has a reference
}

TEST(ElementMath, BinaryOpsMatchTheirDefinitionsNaNIncluded) {
  const float nan = std::nanf("");
  struct Case {
    float a, b;
  } cases[] = {{1.5f, -2.25f}, {-3.0f, 0.5f}, {2.0f, 3.0f}, {0.0f, -0.0f}, {nan, 1.0f}, {1.0f, nan}};
  for (const Case &c : cases) {
    float a = c.a, b = c.b;
    double da = a, db = b;
    auto same = [](double got, double want) { return std::isnan(want) ? std::isnan(got) : got == want; };
#define CHECK_BINARY(name, id, expr)                                                                               \
  {                                                                                                                \
    std::string op = name;                                                                                         \
    double want = op == "Add"   ? da + db                                                                          \
                  : op == "Sub" ? da - db                                                                          \
                  : op == "Mul" ? da * db                                                                          \
                  : op == "Div" ? da / db                                                                          \
                  : op == "Max" ? (da < db ? db : da) /* std::max: a NaN first operand is kept */                  \
                  : op == "Min" ? (db < da ? db : da)                                                              \
                                : std::pow(da, db);                                                                \
    float got = (expr);                                                                                            \
    EXPECT_TRUE(same(got, static_cast<float>(want))) << op << "(" << a << ", " << b << ") = " << got;             \
  }
    PARTITA_BINARY_OPS(CHECK_BINARY)
#undef CHECK_BINARY
  }
}

TEST(ElementMath, AdamWFollowsTorchsFormulaOverSteps) {
  // torch.optim.AdamW (decoupled decay), in double: p <- p (1 - lr wd);
  // m <- b1 m + (1 - b1) g; v <- b2 v + (1 - b2) g^2;
  // p <- p - lr (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps).
  const double b1 = 0.9, b2 = 0.95, eps = 1e-8, wd = 0.1, lr = 3e-3, scale = 0.25;
  std::mt19937 rng(7);
  std::normal_distribution<float> normal;
  for (int k = 0; k < 64; ++k) {
    float p = normal(rng), m = 0, v = 0;
    double pd = p, md = 0, vd = 0;
    for (int t = 1; t <= 20; ++t) {
      float g = normal(rng) * 4; // scaled by 1/4 below, as an fp16 loss scale's inverse
      double bc1 = 1 - std::pow(b1, t), bc2 = 1 - std::pow(b2, t), gd = scale * static_cast<double>(g);
      AdamWStep step = adamwStep(static_cast<float>(lr), static_cast<float>(bc1), static_cast<float>(bc2),
                                 static_cast<float>(b1), static_cast<float>(b2), static_cast<float>(eps),
                                 static_cast<float>(wd), static_cast<float>(scale));
      p = adamwUpdate(step, p, g, m, v);
      pd *= 1 - lr * wd;
      md = b1 * md + (1 - b1) * gd;
      vd = b2 * vd + (1 - b2) * gd * gd;
      pd -= lr * (md / bc1) / (std::sqrt(vd / bc2) + eps);
      ASSERT_NEAR(m, md, 1e-6 * (1 + std::fabs(md))) << "element " << k << ", step " << t;
      ASSERT_NEAR(v, vd, 1e-6 * (1 + std::fabs(vd))) << "element " << k << ", step " << t;
      ASSERT_NEAR(p, pd, 2e-6 * (1 + std::fabs(pd))) << "element " << k << ", step " << t;
    }
  }
}
