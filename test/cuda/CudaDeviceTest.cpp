//===- CudaDeviceTest.cpp - the CUDA device on a GPU ------------------------===//
//
// Runs only where a GPU is visible: without one main() exits 77, which ctest
// counts as skipped (SKIP_RETURN_CODE), never as passed. References are the
// CPU's: the same shared formulas (ElementMath.h) evaluated on the host in
// double, and host copies of the bytes.
//===----------------------------------------------------------------------===//
#include "compiler/ir/Parser.h"
#include "runtime/core/DeviceRegistry.h"
#include "runtime/executor/Program.h"
#include "runtime/core/DeviceTensor.h"
#include "runtime/cuda/CudaDevice.h"
#include "runtime/cuda/GpuKernels.h"
#include "runtime/cuda/NcclCommunicator.h"
#include "runtime/cuda/TrainKernels.h"
#include "runtime/kernels/KernelRegistry.h"
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

using namespace partita;
using namespace partita::rt;

namespace {

std::unique_ptr<CudaDevice> makeGpu() {
  auto device = CudaDevice::create(0);
  if (!device) {
    ADD_FAILURE() << llvm::toString(device.takeError());
    return nullptr;
  }
  return std::move(*device);
}

std::vector<float> randomFloats(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  std::vector<float> v(n);
  for (float &x : v)
    x = normal(rng);
  return v;
}

template <typename T> std::vector<T> download(Device &d, const void *at, size_t n) {
  std::vector<T> out(n);
  d.copyToHost(out.data(), at, n * sizeof(T));
  return out;
}

} // namespace

TEST(CudaDevice, CopiesRoundTripAcrossStagingChunks) {
  auto d = makeGpu();
  ASSERT_TRUE(d);
  for (size_t bytes : {size_t(1), size_t(4096), (size_t(8) << 20) * 2 + 3}) { // the last crosses two chunks
    std::vector<uint8_t> host(bytes);
    for (size_t i = 0; i < bytes; ++i)
      host[i] = static_cast<uint8_t>(i * 131 + 7);
    void *a = d->allocate(bytes), *b = d->allocate(bytes);
    ASSERT_TRUE(a && b);
    d->copyFromHost(a, host.data(), bytes);
    d->copyOnDevice(b, a, bytes);
    EXPECT_EQ(download<uint8_t>(*d, b, bytes), host) << bytes << " bytes";
    d->deallocate(a);
    d->deallocate(b);
  }
  EXPECT_FALSE(static_cast<bool>(d->finishWork()));
}

TEST(CudaDevice, AnEventCompletesWithTheWorkItCaptured) {
  auto d = makeGpu();
  ASSERT_TRUE(d);
  const int64_t n = 1 << 24;
  auto x = randomFloats(n, 1);
  void *a = d->allocate(n * 4), *b = d->allocate(n * 4);
  d->copyFromHost(a, x.data(), n * 4);
  auto done = d->createEvent();
  EXPECT_TRUE(done->query()); // never recorded: counts as finished
  for (int k = 0; k < 20; ++k) // long enough to be seen running
    gpu::binary(gpu::Binary::Mul, static_cast<float *>(a), static_cast<float *>(a), static_cast<float *>(b), n,
                nullptr, d->computeStream());
  done->record(d->defaultStream());
  auto other = d->createStream();
  other->wait(*done); // the other stream's later work follows the products
  done->synchronize();
  EXPECT_TRUE(done->query());
  EXPECT_TRUE(d->defaultStream().query());
  auto y = download<float>(*d, b, n);
  for (int64_t i = 0; i < n; i += 4099)
    ASSERT_EQ(y[i], x[i] * x[i]) << i;
  d->deallocate(a);
  d->deallocate(b);
  EXPECT_FALSE(static_cast<bool>(d->finishWork()));
}

TEST(CudaKernels, UnaryAndBinaryOpsEqualTheHostFormulas) {
  auto d = makeGpu();
  ASSERT_TRUE(d);
  const int64_t n = 100003;
  auto x = randomFloats(n, 2), y = randomFloats(n, 3);
  for (float &v : x)
    v = std::fabs(v) + 0.01f; // Sqrt and Log take it
  void *dx = d->allocate(n * 4), *dy = d->allocate(n * 4), *out = d->allocate(n * 4);
  d->copyFromHost(dx, x.data(), n * 4);
  d->copyFromHost(dy, y.data(), n * 4);
#define CHECK_UNARY(name, id, expr)                                                                                \
  {                                                                                                                \
    gpu::unary(gpu::Unary::id, static_cast<float *>(dx), static_cast<float *>(out), n, d->computeStream());       \
    auto got = download<float>(*d, out, n);                                                                        \
    for (int64_t i = 0; i < n; ++i) {                                                                              \
      float x_ = x[i];                                                                                             \
      float want = [](float x) { return expr; }(x_);                                                               \
      ASSERT_NEAR(got[i], want, 2e-6f * std::max(1.0f, std::fabs(want))) << name << " at " << i;                   \
    }                                                                                                              \
  }
  PARTITA_UNARY_OPS(CHECK_UNARY)
#undef CHECK_UNARY
#define CHECK_BINARY(name, id, expr)                                                                               \
  {                                                                                                                \
    gpu::binary(gpu::Binary::id, static_cast<float *>(dx), static_cast<float *>(dy), static_cast<float *>(out), n, \
                nullptr, d->computeStream());                                                                      \
    auto got = download<float>(*d, out, n);                                                                        \
    for (int64_t i = 0; i < n; ++i) {                                                                              \
      float want = [](float a, float b) { return expr; }(x[i], y[i]);                                              \
      ASSERT_NEAR(got[i], want, 2e-6f * std::max(1.0f, std::fabs(want))) << name << " at " << i;                   \
    }                                                                                                              \
  }
  PARTITA_BINARY_OPS(CHECK_BINARY)
#undef CHECK_BINARY
  // Broadcast: [3, 1, 5] op [4, 1] -> [3, 4, 5].
  gpu::Broadcast s;
  s.rank = 3;
  int64_t shape[3] = {3, 4, 5}, sa[3] = {5, 0, 1}, sb[3] = {0, 1, 0};
  for (int k = 0; k < 3; ++k) {
    s.shape[k] = shape[k];
    s.strideA[k] = sa[k];
    s.strideB[k] = sb[k];
  }
  gpu::binary(gpu::Binary::Sub, static_cast<float *>(dx), static_cast<float *>(dy), static_cast<float *>(out), 60,
              &s, d->computeStream());
  auto got = download<float>(*d, out, 60);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j)
      for (int k = 0; k < 5; ++k)
        ASSERT_EQ(got[(i * 4 + j) * 5 + k], x[i * 5 + k] - y[j]) << i << "," << j << "," << k;
  for (void *p : {dx, dy, out})
    d->deallocate(p);
  EXPECT_FALSE(static_cast<bool>(d->finishWork()));
}

TEST(CudaKernels, CastsRoundAsTheHostDoes) {
  auto d = makeGpu();
  ASSERT_TRUE(d);
  const int64_t n = 65536;
  std::vector<float> x(n);
  for (int64_t i = 0; i < n; ++i) // every bf16 pattern's neighbourhood, NaN and inf included
    x[i] = bitsFloat(static_cast<uint32_t>(i) << 16 | static_cast<uint32_t>(i * 2654435761u) >> 16);
  void *dx = d->allocate(n * 4), *h = d->allocate(n * 2), *back = d->allocate(n * 4);
  d->copyFromHost(dx, x.data(), n * 4);
  for (gpu::Number t : {gpu::Number::BF16, gpu::Number::F16}) {
    gpu::convert(gpu::Number::F32, t, dx, h, n, d->computeStream());
    gpu::convert(t, gpu::Number::F32, h, back, n, d->computeStream());
    auto half = download<uint16_t>(*d, h, n);
    auto wide = download<uint32_t>(*d, back, n);
    for (int64_t i = 0; i < n; ++i) {
      uint16_t want = t == gpu::Number::BF16 ? floatToBf16(x[i]) : floatToHalf(x[i]);
      ASSERT_EQ(half[i], want) << i;
      float w = t == gpu::Number::BF16 ? bf16ToFloat(want) : halfToFloat(want);
      ASSERT_EQ(wide[i], floatBits(w)) << i;
    }
  }
  for (void *p : {dx, h, back})
    d->deallocate(p);
  EXPECT_FALSE(static_cast<bool>(d->finishWork()));
}

TEST(CudaKernels, AdamWReadsItsScalarsFromDeviceMemory) {
  auto d = makeGpu();
  ASSERT_TRUE(d);
  const int64_t n = 300001;
  auto p = randomFloats(n, 4), g = randomFloats(n, 5), m = randomFloats(n, 6), v = randomFloats(n, 7);
  for (float &x : v)
    x = x * x;
  float scalars[4] = {1e-3f, 0.19f, 0.0975f, 0.5f}; // lr, 1 - b1^t, 1 - b2^t, gradient scale
  std::vector<void *> bufs;
  auto up = [&](const void *src, size_t bytes) {
    void *at = d->allocate(bytes);
    d->copyFromHost(at, src, bytes);
    bufs.push_back(at);
    return static_cast<float *>(at);
  };
  float *s = up(scalars, sizeof scalars), *dp = up(p.data(), n * 4), *dg = up(g.data(), n * 4),
        *dm = up(m.data(), n * 4), *dv = up(v.data(), n * 4);
  float *po = up(p.data(), n * 4), *mo = up(m.data(), n * 4), *vo = up(v.data(), n * 4);
  gpu::AdamW a{s, s + 1, s + 2, s + 3, 0.9f, 0.95f, 1e-8f, 0.1f, dp, dg, dm, dv, po, mo, vo, n};
  gpu::adamw(a, d->computeStream());
  auto gp = download<float>(*d, po, n), gm = download<float>(*d, mo, n), gv = download<float>(*d, vo, n);
  AdamWStep step = adamwStep(scalars[0], scalars[1], scalars[2], 0.9f, 0.95f, 1e-8f, 0.1f, scalars[3]);
  for (int64_t i = 0; i < n; ++i) {
    float mi = m[i], vi = v[i];
    float want = adamwUpdate(step, p[i], g[i], mi, vi);
    ASSERT_NEAR(gp[i], want, 1e-6f * (1 + std::fabs(want))) << i;
    ASSERT_NEAR(gm[i], mi, 1e-6f * (1 + std::fabs(mi))) << i;
    ASSERT_NEAR(gv[i], vi, 1e-6f * (1 + std::fabs(vi))) << i;
  }
  for (void *b : bufs)
    d->deallocate(b);
  EXPECT_FALSE(static_cast<bool>(d->finishWork()));
}

TEST(CudaKernels, EveryOpOfTheTablesIsRegisteredForCuda) {
  const KernelRegistry &r = KernelRegistry::get();
#define CHECK_REGISTERED(name, id, expr) EXPECT_NE(r.find(name, kCudaDevice), nullptr) << name;
  PARTITA_UNARY_OPS(CHECK_REGISTERED)
  PARTITA_BINARY_OPS(CHECK_REGISTERED)
#undef CHECK_REGISTERED
  EXPECT_NE(r.find("partita.AdamW", kCudaDevice), nullptr);
  EXPECT_NE(r.find("Cast", kCudaDevice), nullptr);
}

// A program on the GPU: a Linear with bias and ReLU fused into cuBLASLt's
// epilogue, then attention-shaped batched products, against float64 loops.
TEST(CudaKernels, GemmsThroughAProgramEqualFloat64) {
  auto d = makeGpu();
  ASSERT_TRUE(d);
  const char *text = "graph @g(%x: f32[2,5,64], %w: f32[48,64], %b: f32[48], %k: f32[2,4,5,12]) opset 17 {\n"
                     "  %y = partita.Linear(%x, %w, %b) {trans_b = 1} : f32[2,5,48]\n"
                     "  %r = Relu(%y) : f32[2,5,48]\n"
                     "  %s = Constant() {value = dense<i64[4]>[2, 5, 4, 12]} : i64[4]\n"
                     "  %q = Reshape(%r, %s) : f32[2,5,4,12]\n"
                     "  %t = Transpose(%q) {perm = [0, 2, 1, 3]} : f32[2,4,5,12]\n"
                     "  %kt = Transpose(%k) {perm = [0, 1, 3, 2]} : f32[2,4,12,5]\n"
                     "  %a = MatMul(%t, %kt) : f32[2,4,5,5]\n"
                     "  return %r, %a\n}\n";
  auto g = parseGraph(text, "gemm.pir");
  ASSERT_TRUE(static_cast<bool>(g)) << llvm::toString(g.takeError());
  auto program = Program::load(**g, *d);
  ASSERT_TRUE(static_cast<bool>(program)) << llvm::toString(program.takeError());
  auto x = randomFloats(640, 11), w = randomFloats(3072, 12), b = randomFloats(48, 13), k = randomFloats(480, 14);
  llvm::StringMap<TensorView> feeds;
  std::vector<void *> bufs;
  auto feed = [&](const char *name, const std::vector<float> &v, Shape shape) {
    void *at = d->allocate(v.size() * 4);
    d->copyFromHost(at, v.data(), v.size() * 4);
    bufs.push_back(at);
    feeds[name] = TensorView{DType::F32, shape, at};
  };
  feed("x", x, {2, 5, 64});
  feed("w", w, {48, 64});
  feed("b", b, {48});
  feed("k", k, {2, 4, 5, 12});
  auto outs = (*program)->run(feeds);
  ASSERT_TRUE(static_cast<bool>(outs)) << llvm::toString(outs.takeError());
  auto r = download<float>(*d, (*outs)[0].data, 480), a = download<float>(*d, (*outs)[1].data, 200);
  std::vector<double> rd(480);
  for (int row = 0; row < 10; ++row)
    for (int j = 0; j < 48; ++j) {
      double s = b[j];
      for (int c = 0; c < 64; ++c)
        s += static_cast<double>(x[row * 64 + c]) * w[j * 64 + c];
      rd[row * 48 + j] = s > 0 ? s : 0;
      ASSERT_NEAR(r[row * 48 + j], rd[row * 48 + j], 1e-4) << row << "," << j;
    }
  for (int bb = 0; bb < 2; ++bb)
    for (int h = 0; h < 4; ++h)
      for (int i = 0; i < 5; ++i)
        for (int j = 0; j < 5; ++j) {
          double s = 0;
          for (int c = 0; c < 12; ++c) // t[bb,h,i,c] = r[bb,i,h*12+c]; kt[bb,h,c,j] = k[bb,h,j,c]
            s += rd[(bb * 5 + i) * 48 + h * 12 + c] * k[((bb * 4 + h) * 5 + j) * 12 + c];
          ASSERT_NEAR(a[((bb * 4 + h) * 5 + i) * 5 + j], s, 1e-4) << bb << "," << h << "," << i << "," << j;
        }
  for (void *p : bufs)
    d->deallocate(p);
}

// The row kernels through a program: an embedding gather, LayerNorm, a
// masked softmax over the last axis and over an inner one, Split and Concat,
// against float64 loops on the host.
TEST(CudaKernels, RowKernelsThroughAProgramEqualFloat64) {
  auto d = makeGpu();
  ASSERT_TRUE(d);
  const char *text = "graph @g(%t: f32[10,6], %i: i64[2,3], %g: f32[6], %b: f32[6], %m: bool[3,6]) opset 17 {\n"
                     "  %e = Gather(%t, %i) {axis = 0} : f32[2,3,6]\n"
                     "  %n = LayerNormalization(%e, %g, %b) {axis = -1, epsilon = 0.00001} : f32[2,3,6]\n"
                     "  %z = Constant() {value = dense<f32[1]>[-30]} : f32[1]\n"
                     "  %w = Where(%m, %n, %z) : f32[2,3,6]\n"
                     "  %s = Softmax(%w) {axis = -1} : f32[2,3,6]\n"
                     "  %c = Softmax(%n) {axis = 1} : f32[2,3,6]\n"
                     "  %sz = Constant() {value = dense<i64[2]>[2, 4]} : i64[2]\n"
                     "  %p, %q = Split(%s, %sz) {axis = 2} : f32[2,3,2], f32[2,3,4]\n"
                     "  %c1, %c2 = Split(%c, %sz) {axis = 2} : f32[2,3,2], f32[2,3,4]\n"
                     "  %j = Concat(%q, %c2) {axis = 1} : f32[2,6,4]\n"
                     "  return %p, %j\n}\n";
  auto g = parseGraph(text, "rows.pir");
  ASSERT_TRUE(static_cast<bool>(g)) << llvm::toString(g.takeError());
  auto program = Program::load(**g, *d);
  ASSERT_TRUE(static_cast<bool>(program)) << llvm::toString(program.takeError());
  auto table = randomFloats(60, 21), gamma = randomFloats(6, 22), beta = randomFloats(6, 23);
  std::vector<int64_t> ids = {3, 0, 9, -1, 4, 4};
  uint8_t mask[18];
  for (int k = 0; k < 18; ++k)
    mask[k] = (k % 6) <= (k / 6) + 2; // a causal-like pattern
  llvm::StringMap<TensorView> feeds;
  std::vector<void *> bufs;
  auto feed = [&](const char *name, const void *bytes, size_t n, DType t, Shape shape) {
    void *at = d->allocate(n);
    d->copyFromHost(at, bytes, n);
    bufs.push_back(at);
    feeds[name] = TensorView{t, shape, at};
  };
  feed("t", table.data(), 240, DType::F32, {10, 6});
  feed("i", ids.data(), 48, DType::I64, {2, 3});
  feed("g", gamma.data(), 24, DType::F32, {6});
  feed("b", beta.data(), 24, DType::F32, {6});
  feed("m", mask, 18, DType::Bool, {3, 6});
  auto outs = (*program)->run(feeds);
  ASSERT_TRUE(static_cast<bool>(outs)) << llvm::toString(outs.takeError());
  auto p = download<float>(*d, (*outs)[0].data, 12), j = download<float>(*d, (*outs)[1].data, 48);
  // float64 reference
  double n[2][3][6], sm[2][3][6], c[2][3][6];
  for (int r = 0; r < 6; ++r) {
    int64_t row = ids[r] < 0 ? ids[r] + 10 : ids[r];
    double mean = 0, var = 0;
    for (int k = 0; k < 6; ++k)
      mean += table[row * 6 + k] / 6.0;
    for (int k = 0; k < 6; ++k)
      var += (table[row * 6 + k] - mean) * (table[row * 6 + k] - mean) / 6.0;
    for (int k = 0; k < 6; ++k)
      n[r / 3][r % 3][k] = (table[row * 6 + k] - mean) / std::sqrt(var + 1e-5) * gamma[k] + beta[k];
  }
  for (int a = 0; a < 2; ++a)
    for (int r = 0; r < 3; ++r) {
      double w[6], mx = -1e300, sum = 0;
      for (int k = 0; k < 6; ++k)
        mx = std::max(mx, w[k] = mask[r * 6 + k] ? n[a][r][k] : -30.0);
      for (int k = 0; k < 6; ++k)
        sum += std::exp(w[k] - mx);
      for (int k = 0; k < 6; ++k)
        sm[a][r][k] = std::exp(w[k] - mx) / sum;
    }
  for (int a = 0; a < 2; ++a)
    for (int k = 0; k < 6; ++k) {
      double mx = -1e300, sum = 0;
      for (int r = 0; r < 3; ++r)
        mx = std::max(mx, n[a][r][k]);
      for (int r = 0; r < 3; ++r)
        sum += std::exp(n[a][r][k] - mx);
      for (int r = 0; r < 3; ++r)
        c[a][r][k] = std::exp(n[a][r][k] - mx) / sum;
    }
  for (int a = 0; a < 2; ++a)
    for (int r = 0; r < 3; ++r) {
      for (int k = 0; k < 2; ++k)
        EXPECT_NEAR(p[(a * 3 + r) * 2 + k], sm[a][r][k], 1e-5) << a << "," << r << "," << k;
      for (int k = 0; k < 4; ++k) {
        EXPECT_NEAR(j[(a * 6 + r) * 4 + k], sm[a][r][k + 2], 1e-5) << "concat first half " << a << "," << r;
        EXPECT_NEAR(j[(a * 6 + 3 + r) * 4 + k], c[a][r][k + 2], 1e-5) << "concat second half " << a << "," << r;
      }
    }
  for (void *b : bufs)
    d->deallocate(b);
}

// A training step's own kernels through a program: reductions over leading
// and inner dims, Expand, Equal and Not on int64 ids, a bool-to-float cast and
// the embedding's gradient (ids repeat: their rows sum), against float64.
TEST(CudaKernels, TrainingKernelsThroughAProgramEqualFloat64) {
  auto d = makeGpu();
  ASSERT_TRUE(d);
  const char *text = "graph @g(%x: f32[4,3,5], %i: i64[4], %j: i64[4], %dy: f32[4,5], %t: f32[6,5]) opset 17 {\n"
                     "  %a = Constant() {value = dense<i64[2]>[0, 1]} : i64[2]\n"
                     "  %s = ReduceSum(%x, %a) {keepdims = 0} : f32[5]\n"
                     "  %m = ReduceMean(%x) {axes = [2], keepdims = 1} : f32[4,3,1]\n"
                     "  %k = ReduceMax(%x) {axes = [1], keepdims = 0} : f32[4,5]\n"
                     "  %sh = Constant() {value = dense<i64[3]>[4, 3, 5]} : i64[3]\n"
                     "  %e = Expand(%m, %sh) : f32[4,3,5]\n"
                     "  %q = Equal(%i, %j) : bool[4]\n"
                     "  %n = Not(%q) : bool[4]\n"
                     "  %f = Cast(%n) {to = 1} : f32[4]\n"
                     "  %g = partita.EmbeddingGrad(%t, %i, %dy) {offset = 0} : f32[6,5]\n"
                     "  return %s, %e, %k, %f, %g\n}\n";
  auto g = parseGraph(text, "train.pir");
  ASSERT_TRUE(static_cast<bool>(g)) << llvm::toString(g.takeError());
  auto program = Program::load(**g, *d);
  ASSERT_TRUE(static_cast<bool>(program)) << llvm::toString(program.takeError());
  auto x = randomFloats(60, 41), dy = randomFloats(20, 42), t = randomFloats(30, 43);
  std::vector<int64_t> ids = {2, 5, 2, 0}, other = {2, 1, 3, 0};
  llvm::StringMap<TensorView> feeds;
  std::vector<void *> bufs;
  auto feed = [&](const char *name, const void *bytes, size_t n, DType type, Shape shape) {
    void *at = d->allocate(n);
    d->copyFromHost(at, bytes, n);
    bufs.push_back(at);
    feeds[name] = TensorView{type, shape, at};
  };
  feed("x", x.data(), 240, DType::F32, {4, 3, 5});
  feed("i", ids.data(), 32, DType::I64, {4});
  feed("j", other.data(), 32, DType::I64, {4});
  feed("dy", dy.data(), 80, DType::F32, {4, 5});
  feed("t", t.data(), 120, DType::F32, {6, 5});
  auto outs = (*program)->run(feeds);
  ASSERT_TRUE(static_cast<bool>(outs)) << llvm::toString(outs.takeError());
  auto sum = download<float>(*d, (*outs)[0].data, 5), ex = download<float>(*d, (*outs)[1].data, 60);
  auto mx = download<float>(*d, (*outs)[2].data, 20), ne = download<float>(*d, (*outs)[3].data, 4);
  auto grad = download<float>(*d, (*outs)[4].data, 30);
  for (int c = 0; c < 5; ++c) {
    double s2 = 0;
    for (int a = 0; a < 12; ++a)
      s2 += x[a * 5 + c];
    EXPECT_NEAR(sum[c], s2, 1e-5) << c;
  }
  for (int a = 0; a < 4; ++a)
    for (int b = 0; b < 3; ++b) {
      double mean = 0;
      for (int c = 0; c < 5; ++c)
        mean += x[(a * 3 + b) * 5 + c] / 5.0;
      for (int c = 0; c < 5; ++c)
        EXPECT_NEAR(ex[(a * 3 + b) * 5 + c], mean, 1e-6) << a << "," << b;
    }
  for (int a = 0; a < 4; ++a)
    for (int c = 0; c < 5; ++c)
      EXPECT_EQ(mx[a * 5 + c], std::max({x[(a * 3) * 5 + c], x[(a * 3 + 1) * 5 + c], x[(a * 3 + 2) * 5 + c]}));
  EXPECT_EQ(ne, (std::vector<float>{0, 1, 1, 0}));
  for (int row = 0; row < 6; ++row)
    for (int c = 0; c < 5; ++c) {
      double want = 0;
      for (int k = 0; k < 4; ++k)
        if (ids[k] == row)
          want += dy[k * 5 + c];
      EXPECT_NEAR(grad[row * 5 + c], want, 1e-6) << row << "," << c;
    }
  for (void *b : bufs)
    d->deallocate(b);
}

// NCCL on one GPU: a world of one rank (NCCL refuses two ranks on one GPU)
// runs every operation through the communication stream and its events.
TEST(NcclCommunicator, OneRankMovesEveryOperationThroughItsStream) {
  auto d = makeGpu();
  ASSERT_TRUE(d);
  auto id = ncclNewId();
  ASSERT_TRUE(static_cast<bool>(id)) << llvm::toString(id.takeError());
  auto comm = NcclCommunicator::join(*d, *id, 0, 1, 60);
  ASSERT_TRUE(static_cast<bool>(comm)) << llvm::toString(comm.takeError());
  EXPECT_EQ((*comm)->size(), 1);
  const int64_t n = 1 << 20;
  auto x = randomFloats(n, 31);
  void *a = d->allocate(n * 4), *b = d->allocate(n * 4);
  d->copyFromHost(a, x.data(), n * 4);
  // A product queued on the compute stream first: the all-reduce must follow it.
  gpu::binary(gpu::Binary::Mul, static_cast<float *>(a), static_cast<float *>(a), static_cast<float *>(a), n, nullptr,
              d->computeStream());
  ASSERT_FALSE(static_cast<bool>((*comm)->allReduce(a, n, DType::F32)));
  auto h = (*comm)->startAllGather(a, b, n, DType::F32);
  ASSERT_TRUE(static_cast<bool>(h));
  ASSERT_FALSE(static_cast<bool>((*comm)->wait(*h)));
  ASSERT_FALSE(static_cast<bool>((*comm)->barrier()));
  auto y = download<float>(*d, b, n);
  for (int64_t i = 0; i < n; i += 997)
    ASSERT_EQ(y[i], x[i] * x[i]) << i;
  auto group = (*comm)->splitGroup(0, 0, "tp");
  ASSERT_TRUE(static_cast<bool>(group)) << llvm::toString(group.takeError());
  EXPECT_EQ((*group)->size(), 1);
  d->deallocate(a);
  d->deallocate(b);
  EXPECT_FALSE(static_cast<bool>(d->finishWork()));
}

int main(int argc, char **argv) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    std::printf("no CUDA GPU visible: skipped\n");
    return 77;
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
