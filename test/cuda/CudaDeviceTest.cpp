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
  for (gpu::Floating t : {gpu::Floating::BF16, gpu::Floating::F16}) {
    gpu::cast(gpu::Floating::F32, t, dx, h, n, d->computeStream());
    gpu::cast(t, gpu::Floating::F32, h, back, n, d->computeStream());
    auto half = download<uint16_t>(*d, h, n);
    auto wide = download<uint32_t>(*d, back, n);
    for (int64_t i = 0; i < n; ++i) {
      uint16_t want = t == gpu::Floating::BF16 ? floatToBf16(x[i]) : floatToHalf(x[i]);
      ASSERT_EQ(half[i], want) << i;
      float w = t == gpu::Floating::BF16 ? bf16ToFloat(want) : halfToFloat(want);
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

int main(int argc, char **argv) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    std::printf("no CUDA GPU visible: skipped\n");
    return 77;
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
