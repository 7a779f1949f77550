// The CPU program's load-time rewrites against plain formulas: a matmul that
// reads Transpose operands through strides (including layouts oneDNN only
// handles with its reference kernel, which the kernel then packs), B operands
// whose rows alias in the cache (copied to a blocked layout every run),
// transposed constant weights, Reshape views that share their input's bytes,
// and outputs bound to caller buffers.
#include "compiler/ir/Parser.h"
#include "runtime/core/Device.h"
#include "runtime/cpu/Dnnl.h"
#include "runtime/executor/Program.h"
#include "runtime/session/Session.h"
#include <gtest/gtest.h>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <sstream>

using namespace partita;

namespace {

std::vector<float> randomValues(int64_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float &x : v)
    x = u(gen);
  return v;
}

std::string shapeText(const Shape &s) {
  std::string t = "f32[";
  for (size_t i = 0; i < s.size(); ++i)
    t += (i ? "," : "") + std::to_string(s[i]);
  return t + "]";
}

/// `data` (row-major `shape`) with its dimensions permuted: out[i] = in[perm^-1(i)].
std::vector<float> transposed(const std::vector<float> &data, const Shape &shape, const std::vector<int64_t> &perm,
                              Shape &outShape) {
  size_t r = shape.size();
  outShape.clear();
  for (int64_t p : perm)
    outShape.push_back(shape[p]);
  std::vector<int64_t> inStride(r, 1);
  for (int i = static_cast<int>(r) - 2; i >= 0; --i)
    inStride[i] = inStride[i + 1] * shape[i + 1];
  std::vector<float> out(data.size());
  std::vector<int64_t> idx(r, 0);
  for (size_t flat = 0; flat < out.size(); ++flat) {
    int64_t src = 0;
    for (size_t d = 0; d < r; ++d)
      src += idx[d] * inStride[perm[d]];
    out[flat] = data[src];
    for (int d = static_cast<int>(r) - 1; d >= 0 && ++idx[d] == outShape[d]; --d)
      idx[d] = 0;
  }
  return out;
}

/// a [batch..., M, K] x b [batch..., K, N] or [K, N], accumulated in double.
std::vector<float> matmul(const std::vector<float> &a, const Shape &as, const std::vector<float> &b, const Shape &bs) {
  int64_t M = as[as.size() - 2], K = as.back(), N = bs.back();
  int64_t batches = static_cast<int64_t>(a.size()) / (M * K);
  bool shared = bs.size() == 2;
  std::vector<float> c(batches * M * N);
  for (int64_t t = 0; t < batches; ++t)
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double s = 0;
        for (int64_t k = 0; k < K; ++k)
          s += double(a[(t * M + i) * K + k]) * b[(shared ? 0 : t * K * N) + k * N + j];
        c[(t * M + i) * N + j] = static_cast<float>(s);
      }
  return c;
}

void expectClose(const std::vector<float> &want, const float *got) {
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_NEAR(got[i], want[i], 1e-4f * (1.0f + std::fabs(want[i]))) << "element " << i;
}

struct Case {
  const char *name;
  Shape a, b;
  std::vector<int64_t> permA, permB; // empty: the operand is used as stored
  bool bConstant = false;
};

class TransposedOperands : public ::testing::TestWithParam<Case> {};

TEST_P(TransposedOperands, MatchFormula) {
  const Case &c = GetParam();
  std::vector<float> a = randomValues(numElements(c.a), 1), b = randomValues(numElements(c.b), 2);
  Shape la = c.a, lb = c.b;
  auto expected = [&] {
    std::vector<float> ta = c.permA.empty() ? a : transposed(a, c.a, c.permA, la);
    std::vector<float> tb = c.permB.empty() ? b : transposed(b, c.b, c.permB, lb);
    return matmul(ta, la, tb, lb);
  };
  std::vector<float> want = expected();
  Shape out(la.begin(), la.end() - 1);
  out.push_back(lb.back());

  std::ostringstream text;
  auto perm = [](const std::vector<int64_t> &p) {
    std::string s = "[";
    for (size_t i = 0; i < p.size(); ++i)
      s += (i ? ", " : "") + std::to_string(p[i]);
    return s + "]";
  };
  text << "graph @g(%a: " << shapeText(c.a) << (c.bConstant ? "" : ", %b: " + shapeText(c.b)) << ") opset 17 {\n";
  if (c.bConstant) {
    text << "  %b = Constant() {value = dense<" << shapeText(c.b) << ">[";
    for (size_t i = 0; i < b.size(); ++i)
      text << (i ? ", " : "") << b[i];
    text << "]} : " << shapeText(c.b) << "\n";
  }
  text << "  %ta = " << (c.permA.empty() ? "Identity(%a)" : "Transpose(%a) {perm = " + perm(c.permA) + "}") << " : "
       << shapeText(la) << "\n";
  text << "  %tb = " << (c.permB.empty() ? "Identity(%b)" : "Transpose(%b) {perm = " + perm(c.permB) + "}") << " : "
       << shapeText(lb) << "\n";
  text << "  %y = MatMul(%ta, %tb) : " << shapeText(out) << "\n  return %y\n}\n";
  auto g = parseGraph(text.str(), "t.pir");
  ASSERT_TRUE(static_cast<bool>(g)) << llvm::toString(g.takeError()) << "\n" << text.str();
  rt::CpuDevice device;
  auto program = rt::Program::load(**g, device);
  ASSERT_TRUE(static_cast<bool>(program)) << llvm::toString(program.takeError());
  llvm::StringMap<rt::TensorView> feeds;
  feeds["a"] = rt::TensorView{DType::F32, c.a, a.data()};
  if (!c.bConstant)
    feeds["b"] = rt::TensorView{DType::F32, c.b, b.data()};
  for (int run = 0; run < 2; ++run) {
    if (run == 1 && !c.bConstant) { // new values in the same buffer: nothing stale may be reused
      std::vector<float> next = randomValues(numElements(c.b), 4);
      std::copy(next.begin(), next.end(), b.begin());
      want = expected();
    }
    auto outs = (*program)->run(feeds);
    ASSERT_TRUE(static_cast<bool>(outs)) << llvm::toString(outs.takeError());
    expectClose(want, (*outs)[0].as<float>());
  }
}

INSTANTIATE_TEST_SUITE_P(
    Program, TransposedOperands,
    ::testing::Values(
        // attention scores: q and k^T both read out of [B, T, H, D] by strides
        Case{"attention_scores", {2, 5, 3, 4}, {2, 5, 3, 4}, {0, 2, 1, 3}, {0, 2, 3, 1}},
        // weight gradient x^T dy, with dy's rows 4 KiB apart (cache-aliased)
        Case{"weight_grad_aliased_rows", {6, 8}, {6, 1024}, {1, 0}, {}},
        // data gradient dy W^T with a constant W (reordered once per weights version)
        Case{"data_grad_constant_weight", {2, 3, 7}, {5, 7}, {}, {1, 0}, true},
        // K strided in A: oneDNN's optimized kernels decline, the kernel packs A
        Case{"k_strided_left", {4, 3, 5}, {3, 6}, {2, 0, 1}, {}},
        // plain operands, batch of 2-D right operand collapsed into one GEMM
        Case{"plain_collapsed", {2, 3, 4}, {4, 6}, {}, {}}),
    [](const ::testing::TestParamInfo<Case> &info) { return std::string(info.param.name); });

TEST(Program, MatMulWritesTransposedResult) {
  // y = Transpose(a @ b, [0, 2, 1, 3]): attention's [B, H, T, D] -> [B, T, H, D],
  // written through strides by the matmul (epilogue), then read by a Reshape view.
  Shape as{2, 3, 5, 4}, bs{2, 3, 4, 6};
  std::vector<float> a = randomValues(numElements(as), 5), b = randomValues(numElements(bs), 6);
  Shape ps, ys;
  std::vector<float> want = transposed(matmul(a, as, b, bs), {2, 3, 5, 6}, {0, 2, 1, 3}, ys);
  auto g = parseGraph("graph @g(%a: f32[2,3,5,4], %b: f32[2,3,4,6]) opset 17 {\n"
                      "  %p = MatMul(%a, %b) : f32[2,3,5,6]\n"
                      "  %t = Transpose(%p) {perm = [0, 2, 1, 3]} : f32[2,5,3,6]\n"
                      "  %s = Constant() {value = dense<i64[3]>[2, 5, 18]} : i64[3]\n"
                      "  %r = Reshape(%t, %s) : f32[2,5,18]\n"
                      "  %one = Constant() {value = dense<f32[]>[1.0]} : f32[]\n"
                      "  %y = Mul(%r, %one) : f32[2,5,18]\n"
                      "  return %y\n}\n",
                      "t.pir");
  ASSERT_TRUE(static_cast<bool>(g)) << llvm::toString(g.takeError());
  rt::CpuDevice device;
  auto program = rt::Program::load(**g, device);
  ASSERT_TRUE(static_cast<bool>(program)) << llvm::toString(program.takeError());
  EXPECT_EQ((*program)->stats().numKernels, 2u); // matmul+transpose, mul; the reshape is a view
  llvm::StringMap<rt::TensorView> feeds;
  feeds["a"] = rt::TensorView{DType::F32, as, a.data()};
  feeds["b"] = rt::TensorView{DType::F32, bs, b.data()};
  auto outs = (*program)->run(feeds);
  ASSERT_TRUE(static_cast<bool>(outs)) << llvm::toString(outs.takeError());
  expectClose(want, (*outs)[0].as<float>());
}

TEST(Program, TransposedProductOfATransposedOperandIsOneKernel) {
  // dW^T = Transpose(Transpose(x) @ dy): a tied embedding's backward. One
  // kernel (the product of the swapped operands, dy^T x), no Transpose run.
  for (const char *mid : {"", "  %n = Neg(%b) : f32[37,19]\n"}) {
    bool viaNeg = *mid != 0;
    Shape xs{37, 21}, ds{37, 19};
    std::vector<float> x = randomValues(numElements(xs), 7), dy = randomValues(numElements(ds), 8);
    std::vector<float> d2 = dy;
    if (viaNeg)
      for (float &v : d2)
        v = -v;
    Shape xts, ys;
    std::vector<float> want = transposed(matmul(transposed(x, xs, {1, 0}, xts), xts, d2, ds), {21, 19}, {1, 0}, ys);
    std::string text = std::string("graph @g(%a: f32[37,21], %b: f32[37,19]) opset 17 {\n") + mid +
                       "  %t = Transpose(%a) {perm = [1, 0]} : f32[21,37]\n"
                       "  %p = MatMul(%t, " + (viaNeg ? "%n" : "%b") + ") : f32[21,19]\n"
                       "  %y = Transpose(%p) {perm = [1, 0]} : f32[19,21]\n"
                       "  return %y\n}\n";
    auto g = parseGraph(text, "t.pir");
    ASSERT_TRUE(static_cast<bool>(g)) << llvm::toString(g.takeError());
    rt::CpuDevice device;
    auto program = rt::Program::load(**g, device);
    ASSERT_TRUE(static_cast<bool>(program)) << llvm::toString(program.takeError());
    EXPECT_EQ((*program)->stats().numKernels, viaNeg ? 2u : 1u);
    llvm::StringMap<rt::TensorView> feeds;
    feeds["a"] = rt::TensorView{DType::F32, xs, x.data()};
    feeds["b"] = rt::TensorView{DType::F32, ds, dy.data()};
    auto outs = (*program)->run(feeds);
    ASSERT_TRUE(static_cast<bool>(outs)) << llvm::toString(outs.takeError());
    expectClose(want, (*outs)[0].as<float>());
  }
}

TEST(Program, TransposeKernelMatchesFormula) {
  // Row by row and in blocks of the source's rows (last two dimensions
  // swapped, heights not a multiple of the block), float32 and 2-byte values.
  struct Case {
    Shape shape;
    std::vector<int64_t> perm;
  };
  for (const Case &c : std::vector<Case>{{{70, 33}, {1, 0}},
                                         {{3, 40, 17}, {0, 2, 1}},
                                         {{5, 18, 16}, {2, 1, 0}},
                                         {{2, 3, 4, 5}, {0, 2, 1, 3}},
                                         {{4, 35, 6}, {2, 0, 1}},
                                         {{2, 16, 64}, {0, 2, 1}}}) {
    for (const char *dtype : {"f32", "bf16"}) {
      bool half = std::string(dtype) == "bf16";
      std::vector<float> x = randomValues(numElements(c.shape), 9);
      Shape ys;
      std::vector<float> want = transposed(x, c.shape, c.perm, ys);
      auto typeText = [&](const Shape &s) { return std::string(dtype) + shapeText(s).substr(3); };
      std::string perm;
      for (int64_t p : c.perm)
        perm += (perm.empty() ? "" : ", ") + std::to_string(p);
      std::string text = "graph @g(%a: " + typeText(c.shape) + ") opset 17 {\n  %y = Transpose(%a) {perm = [" + perm +
                         "]} : " + typeText(ys) + "\n  return %y\n}\n";
      auto g = parseGraph(text, "t.pir");
      ASSERT_TRUE(static_cast<bool>(g)) << llvm::toString(g.takeError());
      rt::CpuDevice device;
      auto program = rt::Program::load(**g, device);
      ASSERT_TRUE(static_cast<bool>(program)) << llvm::toString(program.takeError());
      // bf16 values carry a float's top half: the same permutation of 16-bit words.
      std::vector<uint16_t> xh(x.size());
      for (size_t i = 0; i < x.size(); ++i) {
        uint32_t bits;
        std::memcpy(&bits, &x[i], 4);
        xh[i] = static_cast<uint16_t>(bits >> 16);
      }
      llvm::StringMap<rt::TensorView> feeds;
      feeds["a"] = half ? rt::TensorView{DType::BF16, c.shape, xh.data()} : rt::TensorView{DType::F32, c.shape, x.data()};
      auto outs = (*program)->run(feeds);
      ASSERT_TRUE(static_cast<bool>(outs)) << llvm::toString(outs.takeError());
      for (size_t i = 0; i < want.size(); ++i) {
        uint32_t bits;
        std::memcpy(&bits, &want[i], 4);
        if (half)
          ASSERT_EQ((*outs)[0].as<uint16_t>()[i], static_cast<uint16_t>(bits >> 16)) << dtype << " element " << i;
        else
          ASSERT_EQ((*outs)[0].as<float>()[i], want[i]) << dtype << " element " << i;
      }
    }
  }
}

TEST(Program, ElementwiseClusterMatchesFormula) {
  // Broadcast operands along rows ([4]) and inside ([2,1,4], [2,3,1]),
  // scalars, bool values (Equal, Not, Cast, Where), a value also read outside
  // the cluster mid-way (by ReduceSum), and a bool graph output.
  auto g = parseGraph("graph @g(%x: f32[2,3,4], %r: f32[4], %c: f32[2,1,4]) opset 17 {\n"
                      "  %a = Mul(%x, %r) : f32[2,3,4]\n"
                      "  %b = Add(%a, %c) : f32[2,3,4]\n"
                      "  %zero = Constant() {value = dense<f32[]>[0.0]} : f32[]\n"
                      "  %seven = Constant() {value = dense<f32[]>[7.0]} : f32[]\n"
                      "  %e = Equal(%x, %zero) : bool[2,3,4]\n"
                      "  %w = Where(%e, %seven, %b) : f32[2,3,4]\n"
                      "  %n = Not(%e) : bool[2,3,4]\n"
                      "  %nc = Cast(%n) {to = 1} : f32[2,3,4]\n"
                      "  %t = Tanh(%w) : f32[2,3,4]\n"
                      "  %s = Mul(%t, %nc) : f32[2,3,4]\n"
                      "  %ax = Constant() {value = dense<i64[1]>[2]} : i64[1]\n"
                      "  %sum = ReduceSum(%a, %ax) {keepdims = 1} : f32[2,3,1]\n"
                      "  %y = Add(%s, %sum) : f32[2,3,4]\n"
                      "  return %y, %e\n}\n",
                      "t.pir");
  ASSERT_TRUE(static_cast<bool>(g)) << llvm::toString(g.takeError());
  rt::CpuDevice device;
  auto program = rt::Program::load(**g, device);
  ASSERT_TRUE(static_cast<bool>(program)) << llvm::toString(program.takeError());
  EXPECT_LT((*program)->stats().numKernels, 6u); // 10 elementwise nodes and a ReduceSum
  std::vector<float> x = randomValues(24, 7), r = randomValues(4, 8), c = randomValues(8, 9);
  x[0] = x[5] = x[23] = 0.0f;
  llvm::StringMap<rt::TensorView> feeds;
  feeds["x"] = rt::TensorView{DType::F32, {2, 3, 4}, x.data()};
  feeds["r"] = rt::TensorView{DType::F32, {4}, r.data()};
  feeds["c"] = rt::TensorView{DType::F32, {2, 1, 4}, c.data()};
  auto outs = (*program)->run(feeds);
  ASSERT_TRUE(static_cast<bool>(outs)) << llvm::toString(outs.takeError());
  std::vector<float> y(24);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j) {
      double rowSum = 0;
      for (int k = 0; k < 4; ++k)
        rowSum += x[(i * 3 + j) * 4 + k] * r[k];
      for (int k = 0; k < 4; ++k) {
        int idx = (i * 3 + j) * 4 + k;
        float a = x[idx] * r[k], b = a + c[i * 4 + k];
        bool e = x[idx] == 0.0f;
        float w = e ? 7.0f : b;
        y[idx] = std::tanh(w) * (e ? 0.0f : 1.0f) + static_cast<float>(rowSum);
      }
    }
  expectClose(y, (*outs)[0].as<float>());
  const uint8_t *e = (*outs)[1].as<uint8_t>();
  for (int i = 0; i < 24; ++i)
    EXPECT_EQ(e[i] != 0, x[i] == 0.0f) << "element " << i;
}

TEST(Program, ReduceMaxMinRowsPropagateNaN) {
  // Rows of 37 (not a multiple of the vector width); row 1 holds a NaN.
  auto g = parseGraph("graph @g(%x: f32[3,37]) opset 17 {\n"
                      "  %mx = ReduceMax(%x) {axes = [1], keepdims = 0} : f32[3]\n"
                      "  %mn = ReduceMin(%x) {axes = [1], keepdims = 0} : f32[3]\n"
                      "  %c = ReduceMax(%x) {axes = [0], keepdims = 0} : f32[37]\n"
                      "  return %mx, %mn, %c\n}\n",
                      "t.pir");
  ASSERT_TRUE(static_cast<bool>(g)) << llvm::toString(g.takeError());
  rt::CpuDevice device;
  auto program = rt::Program::load(**g, device);
  ASSERT_TRUE(static_cast<bool>(program)) << llvm::toString(program.takeError());
  std::vector<float> x = randomValues(3 * 37, 11);
  x[37 + 20] = std::nanf("");
  x[2 * 37 + 36] = 5.0f; // the last, scalar-tail element is the max
  llvm::StringMap<rt::TensorView> feeds;
  feeds["x"] = rt::TensorView{DType::F32, {3, 37}, x.data()};
  auto outs = (*program)->run(feeds);
  ASSERT_TRUE(static_cast<bool>(outs)) << llvm::toString(outs.takeError());
  const float *mx = (*outs)[0].as<float>(), *mn = (*outs)[1].as<float>(), *col = (*outs)[2].as<float>();
  for (int r = 0; r < 3; ++r) {
    if (r == 1) {
      EXPECT_TRUE(std::isnan(mx[r]) && std::isnan(mn[r]));
      continue;
    }
    EXPECT_EQ(mx[r], *std::max_element(x.begin() + r * 37, x.begin() + (r + 1) * 37));
    EXPECT_EQ(mn[r], *std::min_element(x.begin() + r * 37, x.begin() + (r + 1) * 37));
  }
  EXPECT_EQ(mx[2], 5.0f);
  EXPECT_TRUE(std::isnan(col[20]));
  EXPECT_EQ(col[0], std::max({x[0], x[37], x[74]}));
}

TEST(Program, ReshapeViewsShareBytesAndOutputsBind) {
  // y = Reshape(x) * 2 read twice; z = Reshape(y) is a graph output (copied
  // into its buffer); w = x + 1 is bound to a caller buffer.
  auto g = parseGraph("graph @g(%x: f32[2,6]) opset 17 {\n"
                      "  %s = Constant() {value = dense<i64[2]>[3, 4]} : i64[2]\n"
                      "  %r = Reshape(%x, %s) : f32[3,4]\n"
                      "  %two = Constant() {value = dense<f32[]>[2.0]} : f32[]\n"
                      "  %y = Mul(%r, %two) : f32[3,4]\n"
                      "  %s2 = Constant() {value = dense<i64[1]>[12]} : i64[1]\n"
                      "  %z = Reshape(%y, %s2) : f32[12]\n"
                      "  %ax = Constant() {value = dense<i64[1]>[1]} : i64[1]\n"
                      "  %v = Unsqueeze(%z, %ax) : f32[12,1]\n"
                      "  %one = Constant() {value = dense<f32[]>[1.0]} : f32[]\n"
                      "  %w = Add(%v, %one) : f32[12,1]\n"
                      "  return %z, %w\n}\n",
                      "t.pir");
  ASSERT_TRUE(static_cast<bool>(g)) << llvm::toString(g.takeError());
  rt::CpuDevice device;
  auto program = rt::Program::load(**g, device);
  ASSERT_TRUE(static_cast<bool>(program)) << llvm::toString(program.takeError());
  std::vector<float> x = randomValues(12, 3), bound(12, 0.0f);
  ASSERT_FALSE(static_cast<bool>((*program)->bindOutput("w", bound.data())));
  llvm::Error missing = (*program)->bindOutput("nope", bound.data());
  EXPECT_TRUE(static_cast<bool>(missing));
  llvm::consumeError(std::move(missing));
  llvm::StringMap<rt::TensorView> feeds;
  feeds["x"] = rt::TensorView{DType::F32, {2, 6}, x.data()};
  auto outs = (*program)->run(feeds);
  ASSERT_TRUE(static_cast<bool>(outs)) << llvm::toString(outs.takeError());
  std::vector<float> z(12), w(12);
  for (int i = 0; i < 12; ++i) {
    z[i] = 2.0f * x[i];
    w[i] = z[i] + 1.0f;
  }
  expectClose(z, (*outs)[0].as<float>());
  EXPECT_EQ((*outs)[1].data, bound.data());
  expectClose(w, bound.data());
}

} // namespace

TEST(Program, HalfCastsRoundToNearestEven) {
  // Casts to fp16 and bf16 and back (mixed precision's round trip) on 1003
  // values (a scalar tail after the 8-wide F16C loop): bit for bit Tensor.h's
  // scalar conversions, and the IEEE results the formats define for ties,
  // overflow and fp16 subnormals.
  const int n = 1003;
  auto g = parseGraph("graph @g(%x: f32[1003]) opset 17 {\n"
                      "  %h = Cast(%x) {to = 10} : f16[1003]\n"
                      "  %b = Cast(%x) {to = 16} : bf16[1003]\n"
                      "  %hw = Cast(%h) {to = 1} : f32[1003]\n"
                      "  %bw = Cast(%b) {to = 1} : f32[1003]\n"
                      "  return %h, %b, %hw, %bw\n}\n",
                      "t.pir");
  ASSERT_TRUE(static_cast<bool>(g)) << llvm::toString(g.takeError());
  rt::CpuDevice device;
  auto program = rt::Program::load(**g, device);
  ASSERT_TRUE(static_cast<bool>(program)) << llvm::toString(program.takeError());
  std::vector<float> x = randomValues(n, 5);
  for (int i = 0; i < n; ++i) // magnitudes from 2^-30 to 2^20
    x[i] *= std::ldexp(1.0f, (i % 51) - 30);
  // value, its fp16, its bf16 (the formats' round-to-nearest-even results)
  const float cases[][3] = {
      {1.0f + 0x1p-11f, 1.0f, 1.0f},                   // fp16 tie: to even (1.0)
      {1.0f + 3 * 0x1p-11f, 1.0f + 0x1p-9f, 1.0f},     // fp16 tie: to even (up)
      {1.0f + 0x1p-8f, 1.0f + 0x1p-8f, 1.0f},          // bf16 tie: to even (1.0)
      {1.0f + 3 * 0x1p-8f, 1.0f + 3 * 0x1p-8f, 1.0f + 0x1p-6f}, // bf16 tie: up
      {65520.0f, INFINITY, 65536.0f},                  // past fp16's largest (65504): inf
      {0x1p-24f, 0x1p-24f, 0x1p-24f},                  // fp16's smallest subnormal
      {0x1p-26f, 0.0f, 0x1p-26f},                      // below half of it: 0
      {-INFINITY, -INFINITY, -INFINITY},
  };
  const int k = sizeof(cases) / sizeof(cases[0]);
  for (int c = 0; c < k; ++c)
    x[n - 1 - c] = cases[c][0]; // in the scalar tail and the last vector
  for (int c = 0; c < k; ++c)
    x[8 * c] = cases[c][0];
  llvm::StringMap<rt::TensorView> feeds;
  feeds["x"] = rt::TensorView{DType::F32, {n}, x.data()};
  auto outs = (*program)->run(feeds);
  ASSERT_TRUE(static_cast<bool>(outs)) << llvm::toString(outs.takeError());
  const auto *h = (*outs)[0].as<uint16_t>(), *b = (*outs)[1].as<uint16_t>();
  const float *hw = (*outs)[2].as<float>(), *bw = (*outs)[3].as<float>();
  for (int i = 0; i < n; ++i) {
    ASSERT_EQ(h[i], floatToHalf(x[i])) << "fp16 of " << x[i];
    ASSERT_EQ(b[i], floatToBf16(x[i])) << "bf16 of " << x[i];
    ASSERT_EQ(hw[i], halfToFloat(h[i])) << i;
    ASSERT_EQ(bw[i], bf16ToFloat(b[i])) << i;
  }
  for (int c = 0; c < k; ++c)
    for (int at : {n - 1 - c, 8 * c}) {
      EXPECT_EQ(hw[at], cases[c][1]) << "fp16 of " << cases[c][0];
      EXPECT_EQ(bw[at], cases[c][2]) << "bf16 of " << cases[c][0];
    }
}

TEST(Program, HalfRoundTripsInsideAnElementwiseChain) {
  // Mixed precision's chains: an op, its rounding to bf16 / fp16 and back, the
  // next op; the half values saved for a backward are outputs too. Fused into
  // one pass or not, each result is Tensor.h's scalar rounding of the f32 op.
  const int n = 1003;
  auto g = parseGraph("graph @g(%x: f32[1003]) opset 17 {\n"
                      "  %a = Mul(%x, %x) : f32[1003]\n"
                      "  %b = Cast(%a) {to = 16} : bf16[1003]\n"
                      "  %c = Cast(%b) {to = 1} : f32[1003]\n"
                      "  %d = Add(%c, %x) : f32[1003]\n"
                      "  %e = Cast(%d) {to = 10} : f16[1003]\n"
                      "  %f = Cast(%e) {to = 1} : f32[1003]\n"
                      "  %y = Sub(%f, %c) : f32[1003]\n"
                      "  return %b, %e, %y\n}\n",
                      "t.pir");
  ASSERT_TRUE(static_cast<bool>(g)) << llvm::toString(g.takeError());
  rt::CpuDevice device;
  auto program = rt::Program::load(**g, device);
  ASSERT_TRUE(static_cast<bool>(program)) << llvm::toString(program.takeError());
  std::vector<float> x = randomValues(n, 7);
  for (int i = 0; i < n; ++i)
    x[i] *= std::ldexp(1.0f, (i % 21) - 10);
  llvm::StringMap<rt::TensorView> feeds;
  feeds["x"] = rt::TensorView{DType::F32, {n}, x.data()};
  auto outs = (*program)->run(feeds);
  ASSERT_TRUE(static_cast<bool>(outs)) << llvm::toString(outs.takeError());
  const auto *b = (*outs)[0].as<uint16_t>(), *e = (*outs)[1].as<uint16_t>();
  const float *y = (*outs)[2].as<float>();
  for (int i = 0; i < n; ++i) {
    uint16_t bi = floatToBf16(x[i] * x[i]);
    float c = bf16ToFloat(bi), d = c + x[i];
    uint16_t ei = floatToHalf(d);
    ASSERT_EQ(b[i], bi) << i;
    ASSERT_EQ(e[i], ei) << i;
    ASSERT_EQ(y[i], halfToFloat(ei) - c) << i;
  }
}

class Bf16Gemm : public testing::TestWithParam<bool> {};

TEST_P(Bf16Gemm, WideningsFeedIt) {
  // Mixed precision's products: both operands widened from bf16 (the
  // backward's through a Transpose). Where oneDNN has a bf16 GEMM (AVX-512
  // BF16, AMX) the matmul reads the bf16 values and the widenings (and the
  // Transpose) never run; the product is the f32 product of the widened
  // values either way (f32 accumulation; the reference in double).
  bool transposed = GetParam();
  auto g = parseGraph(std::string("graph @g(%a: bf16[") + (transposed ? "40,6" : "6,40") + "]) opset 17 {\n"
                      "  %w = Weight() {name = \"w\"} : bf16[40,24]\n" +
                          (transposed ? "  %at = Cast(%a) {to = 1} : f32[40,6]\n"
                                        "  %x = Transpose(%at) {perm = [1, 0]} : f32[6,40]\n"
                                      : "  %x = Cast(%a) {to = 1} : f32[6,40]\n") +
                          "  %wf = Cast(%w) {to = 1} : f32[40,24]\n"
                          "  %y = MatMul(%x, %wf) : f32[6,24]\n"
                          "  return %y\n}\n",
                      "t.pir");
  ASSERT_TRUE(static_cast<bool>(g)) << llvm::toString(g.takeError());
  std::vector<float> wv = randomValues(40 * 24, 11), av = randomValues(6 * 40, 12);
  auto bits = std::make_shared<std::vector<uint8_t>>(wv.size() * 2);
  std::vector<uint16_t> ab(av.size());
  std::vector<float> a(av.size()), w(wv.size());
  for (size_t i = 0; i < wv.size(); ++i) {
    uint16_t h = floatToBf16(wv[i]);
    std::memcpy(bits->data() + 2 * i, &h, 2);
    w[i] = bf16ToFloat(h);
  }
  for (size_t i = 0; i < av.size(); ++i) { // a[r][c] is stored at ab[c * 6 + r] when transposed
    size_t r = i / 40, c = i % 40, at = transposed ? c * 6 + r : i;
    ab[at] = floatToBf16(av[i]);
    a[i] = bf16ToFloat(ab[at]);
  }
  WeightRef ref;
  ref.type = TensorType{DType::BF16, {40, 24}, true};
  ref.inlineBytes = bits;
  ref.length = bits->size();
  (*g)->weights.add("w", ref);
  rt::CpuDevice device;
  auto program = rt::Program::load(**g, device);
  ASSERT_TRUE(static_cast<bool>(program)) << llvm::toString(program.takeError());
  llvm::StringMap<rt::TensorView> feeds;
  feeds["a"] = rt::TensorView{DType::BF16, transposed ? Shape{40, 6} : Shape{6, 40}, ab.data()};
  auto outs = (*program)->run(feeds);
  ASSERT_TRUE(static_cast<bool>(outs)) << llvm::toString(outs.takeError());
  expectClose(matmul(a, {6, 40}, w, {40, 24}), (*outs)[0].as<float>());
  if (!rt::cpu::dnnlHasBf16Matmul())
    GTEST_SKIP() << "no bf16 GEMM on this CPU: the widenings ran (checked the product only)";
  EXPECT_EQ((*program)->stats().numKernels, 1u) << "the bf16 GEMM alone, the widenings read through";
}

INSTANTIATE_TEST_SUITE_P(Program, Bf16Gemm, testing::Bool(),
                         [](const testing::TestParamInfo<bool> &i) { return i.param ? "transposed" : "plain"; });

// A weight the optimizer updates every step (markUpdatedWeights, from the
// plan's params) is read in its own layout: no matmul keeps a blocked copy of
// it, which would be remade every step and cost a copy of the weight per
// matmul. A weight that stays the same (inference, a frozen one) is copied
// into oneDNN's layout once, where oneDNN wants one (here it does).
TEST(Program, UpdatedWeightsKeepNoBlockedCopy) {
  const char *text = "graph @g(%x: f32[64,256]) opset 17 {\n"
                     "  %w = Weight() {name = \"w\"} : f32[256,512]\n"
                     "  %y = MatMul(%x, %w) : f32[64,512]\n"
                     "  return %y\n}\n";
  auto workspace = [&](bool updated) -> size_t {
    auto g = parseGraph(text, "w.pir");
    EXPECT_TRUE(static_cast<bool>(g));
    Plan plan;
    if (updated)
      plan.params = {"w"};
    rt::markUpdatedWeights(**g, plan);
    rt::CpuDevice device;
    auto program = rt::Program::load(**g, device, nullptr, /*readWeights=*/false);
    EXPECT_TRUE(static_cast<bool>(program)) << llvm::toString(program.takeError());
    return (*program)->kernelBytes(rt::MemoryCategory::Workspace);
  };
  EXPECT_GT(workspace(false), 0u) << "oneDNN wants no blocked copy on this CPU: the next check proves nothing";
  EXPECT_EQ(workspace(true), 0u);
}

// A weight the optimizer updates, whose rows are a multiple of 4 KiB apart
// (f32[.., 1024]), is copied into oneDNN's blocked layout at every run (the
// plain layout runs ~2.5x slower, GemmKernels.cpp): that copy is scratch,
// one region for the program's matmuls, not a copy per matmul kept between
// runs. Each run copies the weight's current values (the step rewrites them).
TEST(Program, PerRunBlockedCopiesShareOneScratchRegion) {
  auto g = parseGraph("graph @g(%x: f32[8,64]) opset 17 {\n"
                      "  %w1 = Weight() {name = \"w1\", updated_every_step = 1} : f32[64,1024]\n"
                      "  %w2 = Weight() {name = \"w2\", updated_every_step = 1} : f32[1024,1024]\n"
                      "  %y = MatMul(%x, %w1) : f32[8,1024]\n"
                      "  %z = MatMul(%y, %w2) : f32[8,1024]\n"
                      "  return %z\n}\n",
                      "w.pir");
  ASSERT_TRUE(static_cast<bool>(g)) << llvm::toString(g.takeError());
  rt::CpuDevice device;
  auto program = rt::Program::load(**g, device, nullptr, /*readWeights=*/false);
  ASSERT_TRUE(static_cast<bool>(program)) << llvm::toString(program.takeError());
  rt::Program &p = **program;
  size_t w1Bytes = 64 * 1024 * 4, w2Bytes = 1024 * 1024 * 4, scratch = p.scratchBytes(rt::MemoryCategory::Workspace);
  ASSERT_GE(scratch, w2Bytes) << "oneDNN wants no blocked copy on this CPU: the checks below prove nothing";
  EXPECT_LT(scratch, w1Bytes + w2Bytes) << "a region per matmul";
  EXPECT_EQ(p.kernelBytes(rt::MemoryCategory::Workspace), 0u) << "a copy kept between runs";
  std::vector<float> x = randomValues(8 * 64, 11);
  llvm::StringMap<rt::TensorView> feeds;
  feeds["x"] = rt::TensorView{DType::F32, {8, 64}, x.data()};
  for (unsigned step = 0; step < 2; ++step) { // new weights, as the optimizer writes them
    std::vector<float> w1 = randomValues(64 * 1024, 20 + step), w2 = randomValues(1024 * 1024, 30 + step);
    std::memcpy(p.staticTensor("w1")->data, w1.data(), w1Bytes);
    std::memcpy(p.staticTensor("w2")->data, w2.data(), w2Bytes);
    p.weightsChanged();
    auto outs = p.run(feeds);
    ASSERT_TRUE(static_cast<bool>(outs)) << llvm::toString(outs.takeError());
    SCOPED_TRACE("step " + std::to_string(step));
    expectClose(matmul(matmul(x, {8, 64}, w1, {64, 1024}), {8, 1024}, w2, {1024, 1024}), (*outs)[0].as<float>());
  }
}
