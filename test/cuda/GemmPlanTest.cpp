//===- GemmPlanTest.cpp - cuBLASLt matmuls planned and built without a GPU ---===//
//
// runtime/cuda/GemmPlan.h maps numpy's matmul of row-major tensors onto one
// column-major strided-batched cuBLAS call. Checked two ways: the plan's
// numbers against hand-derived ones, and the plan *executed* by a loop that
// follows cuBLAS's documented semantics (column-major, op(T), strided
// batches) against numpy's matmul in double on random data. Then the kernels'
// cuBLASLt descriptors are made from parsed nodes: that code needs no GPU.
//===----------------------------------------------------------------------===//
#include "compiler/ir/Parser.h"
#include "runtime/cuda/CudaDevice.h"
#include "runtime/cuda/GemmKernel.h"
#include "runtime/cuda/GemmPlan.h"
#include "runtime/kernels/KernelRegistry.h"
#include <gtest/gtest.h>
#include <random>

using namespace partita;
using namespace partita::rt::cuda;

namespace {

/// cuBLAS's C[m x n] = op(A) B per batch, column-major, as its documentation
/// defines it (A = our "first", B = our "second").
std::vector<double> runLikeCublas(const GemmPlan &p, const std::vector<double> &first,
                                  const std::vector<double> &second) {
  std::vector<double> c(static_cast<size_t>(p.batch * p.strideResult + p.m * p.n), 0.0);
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t col = 0; col < p.n; ++col)
      for (int64_t row = 0; row < p.m; ++row) {
        double sum = 0;
        for (int64_t k = 0; k < p.k; ++k) {
          double a = p.transFirst ? first[b * p.strideFirst + row * p.ldFirst + k]  // A stored k x m
                                  : first[b * p.strideFirst + k * p.ldFirst + row]; // A stored m x k
          sum += a * second[b * p.strideSecond + col * p.ldSecond + k];
        }
        c[b * p.strideResult + col * p.ldResult + row] = sum;
      }
  return c;
}

/// numpy.matmul(a, b) (b given [N, K] when transposed), row-major, in double.
std::vector<double> numpyMatmul(const Shape &a, const std::vector<double> &x, const Shape &b,
                                const std::vector<double> &w, bool bT, Shape &out) {
  Shape A = a, B = b;
  if (A.size() == 1)
    A.insert(A.begin(), 1);
  if (B.size() == 1)
    B.push_back(1);
  int64_t M = A[A.size() - 2], K = A.back(), N = bT ? B[0] : B.back();
  size_t rank = std::max(A.size(), B.size()) - 2;
  Shape batch(rank);
  auto dim = [&](const Shape &s, size_t i) { size_t pad = rank - (s.size() - 2); return i < pad ? 1 : s[i - pad]; };
  for (size_t i = 0; i < rank; ++i)
    batch[i] = std::max(dim(A, i), dim(B, i));
  int64_t count = 1;
  for (int64_t d : batch)
    count *= d;
  std::vector<double> y(static_cast<size_t>(count * M * N));
  for (int64_t bi = 0; bi < count; ++bi) {
    int64_t rest = bi, offA = 0, offB = 0, strideA = M * K, strideB = K * N;
    for (int i = static_cast<int>(rank) - 1; i >= 0; --i) {
      int64_t idx = rest % batch[i];
      rest /= batch[i];
      offA += (dim(A, i) == 1 ? 0 : idx) * strideA;
      offB += (dim(B, i) == 1 ? 0 : idx) * strideB;
      strideA *= dim(A, i);
      strideB *= dim(B, i);
    }
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double s = 0;
        for (int64_t k = 0; k < K; ++k)
          s += x[offA + i * K + k] * (bT ? w[j * K + k] : w[offB + k * N + j]);
        y[bi * M * N + i * N + j] = s;
      }
  }
  out = batch;
  out.push_back(M);
  out.push_back(N);
  return y;
}

std::vector<double> random(int64_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<double> v(static_cast<size_t>(n));
  for (double &x : v)
    x = u(rng);
  return v;
}

int64_t count(const Shape &s) {
  int64_t n = 1;
  for (int64_t d : s)
    n *= d;
  return n;
}

} // namespace

TEST(GemmPlan, NumbersForTheCommonShapes) {
  auto rows = planGemm({2, 3, 4}, {4, 5}, false); // activations by a weight: batches fold into rows
  ASSERT_TRUE(static_cast<bool>(rows));
  EXPECT_EQ(std::make_tuple(rows->m, rows->n, rows->k, rows->batch), std::make_tuple(5, 6, 4, 1));
  EXPECT_EQ(std::make_tuple(rows->ldFirst, rows->ldSecond, rows->ldResult), std::make_tuple(5, 4, 5));
  auto linear = planGemm({8, 16}, {32, 16}, true); // Linear's trans_b: w stored [N, K]
  ASSERT_TRUE(static_cast<bool>(linear));
  EXPECT_TRUE(linear->transFirst);
  EXPECT_EQ(std::make_tuple(linear->m, linear->n, linear->k, linear->ldFirst), std::make_tuple(32, 8, 16, 16));
  auto heads = planGemm({2, 4, 7, 8}, {2, 4, 8, 7}, false); // attention's scores
  ASSERT_TRUE(static_cast<bool>(heads));
  EXPECT_EQ(std::make_tuple(heads->batch, heads->strideFirst, heads->strideSecond, heads->strideResult),
            std::make_tuple(8, 56, 56, 49));
  auto shared = planGemm({7, 8}, {2, 8, 5}, false); // A broadcast over B's batches
  ASSERT_TRUE(static_cast<bool>(shared));
  EXPECT_EQ(std::make_tuple(shared->batch, shared->strideSecond), std::make_tuple(2, 0));
}

TEST(GemmPlan, ExecutedAsCublasDefinesItEqualsNumpysMatmul) {
  struct Case {
    Shape a, b;
    bool bT;
  } cases[] = {{{2, 3, 4}, {4, 5}, false},    {{8, 16}, {32, 16}, true},      {{2, 4, 7, 8}, {2, 4, 8, 7}, false},
               {{7, 8}, {2, 8, 5}, false},    {{4}, {4, 5}, false},           {{3, 4}, {4}, false},
               {{1, 3, 5, 6}, {3, 6, 2}, false}, {{2, 1, 3, 4}, {2, 1, 4, 2}, false}, {{5, 2, 6}, {3, 6}, true}};
  for (const Case &c : cases) {
    auto p = planGemm(c.a, c.b, c.bT);
    ASSERT_TRUE(static_cast<bool>(p)) << llvm::toString(p.takeError());
    auto x = random(count(c.a), 1), w = random(count(c.b), 2);
    Shape outShape;
    auto want = numpyMatmul(c.a, x, c.b, w, c.bT, outShape);
    auto got = runLikeCublas(*p, w, x); // cuBLAS's first operand is our B
    for (size_t i = 0; i < want.size(); ++i)
      ASSERT_NEAR(got[i], want[i], 1e-12) << "case a" << c.a.size() << " element " << i;
  }
}

TEST(GemmPlan, RefusesWhatOneStridedCallCannotExpress) {
  auto partly = planGemm({2, 3, 4, 5}, {3, 5, 6}, false);
  ASSERT_FALSE(static_cast<bool>(partly));
  EXPECT_EQ(llvm::toString(partly.takeError()),
            "a matmul of [2, 3, 4, 5] and [3, 5, 6]: batch dimensions broadcast partly (each operand would need "
            "its own strides per dimension)");
  auto inner = planGemm({2, 3}, {4, 5}, false);
  ASSERT_FALSE(static_cast<bool>(inner));
  EXPECT_EQ(llvm::toString(inner.takeError()), "a matmul of [2, 3] and [4, 5]: inner dimensions differ");
}

TEST(GemmKernel, DescriptorsAreBuiltWithoutAGpu) {
  const char *text = "graph @g(%x: f32[4,8], %w: f32[16,8], %b: f32[16], %i: i64[4,8], %j: i64[8,2]) opset 17 {\n"
                     "  %y = partita.Linear(%x, %w, %b) {trans_b = 1} : f32[4,16]\n"
                     "  %r = Relu(%y) : f32[4,16]\n"
                     "  %k = MatMul(%i, %j) : i64[4,2]\n"
                     "  return %r, %k\n}\n";
  auto g = parseGraph(text, "gemm.pir");
  ASSERT_TRUE(static_cast<bool>(g)) << llvm::toString(g.takeError());
  const Node *linear = nullptr, *relu = nullptr, *ints = nullptr;
  for (const Node *n : (*g)->nodes())
    (n->is("Linear", "partita") ? linear : n->is("Relu") ? relu : ints) = n;
  auto fused = makeGemmKernel(*linear, {}, relu); // bias + ReLU epilogue
  ASSERT_TRUE(static_cast<bool>(fused)) << llvm::toString(fused.takeError());
  EXPECT_EQ((*fused)->scratch().bytes, kGemmWorkspace);
  auto refused = makeGemmKernel(*ints, {}, nullptr);
  ASSERT_FALSE(static_cast<bool>(refused));
  EXPECT_NE(llvm::toString(refused.takeError()).find("no cuda kernel for a matmul of i64 by i64"), std::string::npos);
  // Registered for the cuda device type, epilogue and operand fusion included.
  const rt::KernelRegistry &r = rt::KernelRegistry::get();
  EXPECT_TRUE(r.find("MatMul", rt::kCudaDevice));
  EXPECT_TRUE(r.findEpilogue("partita.Linear", "partita.FastGelu", rt::kCudaDevice));
  EXPECT_FALSE(r.findEpilogue("partita.Linear", "partita.Gelu", rt::kCudaDevice)); // the erf GELU is not cuBLASLt's
  EXPECT_TRUE(r.findOperandFusion("MatMul", "Cast", rt::kCudaDevice));
}
