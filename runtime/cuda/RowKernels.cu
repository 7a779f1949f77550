//===- RowKernels.cu - LayerNorm, softmax, Where, row gathers --------------===//
//
// One block per row for the reductions (LayerNorm, a softmax over the last
// axis): the row's sums are a block reduction in a fixed order, so a row's
// result does not depend on timing. exp is libdevice's expf (the CPU's
// softmax uses an accurate exp too: std::exp or oneDNN's).
//===----------------------------------------------------------------------===//
#include "runtime/cuda/Grid.h"
#include "runtime/cuda/RowKernels.h"

namespace partita::rt::gpu {

namespace {

constexpr int kRowThreads = 256;

/// The sum over the block of each thread's `v` (every thread gets it).
__device__ float blockSum(float v, float *shared) {
  for (int o = 16; o > 0; o >>= 1)
    v += __shfl_xor_sync(0xffffffffu, v, o);
  int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0)
    shared[warp] = v;
  __syncthreads();
  float total = 0;
  for (int w = 0; w < kRowThreads / 32; ++w)
    total += shared[w];
  __syncthreads();
  return total;
}

__device__ float blockMax(float v, float *shared) {
  for (int o = 16; o > 0; o >>= 1)
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0)
    shared[warp] = v;
  __syncthreads();
  float m = shared[0];
  for (int w = 1; w < kRowThreads / 32; ++w)
    m = fmaxf(m, shared[w]);
  __syncthreads();
  return m;
}

__global__ void layerNormKernel(const float *x, const float *g, int64_t gLen, const float *b, int64_t bLen, float *y,
                                float *meanOut, float *rstdOut, int64_t len, float eps) {
  __shared__ float shared[kRowThreads / 32];
  const float *px = x + blockIdx.x * len;
  float *py = y + blockIdx.x * len;
  float s = 0;
  for (int64_t i = threadIdx.x; i < len; i += blockDim.x)
    s += px[i];
  float mean = blockSum(s, shared) / static_cast<float>(len);
  float sq = 0;
  for (int64_t i = threadIdx.x; i < len; i += blockDim.x) {
    float d = px[i] - mean;
    sq += d * d;
  }
  float rstd = 1.0f / sqrtf(blockSum(sq, shared) / static_cast<float>(len) + eps);
  for (int64_t i = threadIdx.x; i < len; i += blockDim.x) {
    float v = (px[i] - mean) * rstd * g[i % gLen];
    py[i] = b ? v + b[i % bLen] : v;
  }
  if (threadIdx.x == 0) {
    if (meanOut)
      meanOut[blockIdx.x] = mean;
    if (rstdOut)
      rstdOut[blockIdx.x] = rstd;
  }
}

__global__ void softmaxRowKernel(const float *x, float *y, int64_t len, bool log) {
  __shared__ float shared[kRowThreads / 32];
  const float *px = x + blockIdx.x * len;
  float *py = y + blockIdx.x * len;
  float m = -INFINITY;
  for (int64_t i = threadIdx.x; i < len; i += blockDim.x)
    m = fmaxf(m, px[i]);
  m = blockMax(m, shared);
  float s = 0;
  for (int64_t i = threadIdx.x; i < len; i += blockDim.x)
    s += expf(px[i] - m);
  s = blockSum(s, shared);
  float logSum = logf(s);
  for (int64_t i = threadIdx.x; i < len; i += blockDim.x)
    py[i] = log ? px[i] - m - logSum : expf(px[i] - m) / s;
}

/// A softmax over an inner axis: one thread per (outer, inner) pair.
__global__ void softmaxStridedKernel(const float *x, float *y, int64_t outer, int64_t len, int64_t inner, bool log) {
  PARTITA_GRID_STRIDE(t, outer * inner) {
    const float *px = x + (t / inner) * len * inner + t % inner;
    float *py = y + (t / inner) * len * inner + t % inner;
    float m = -INFINITY, s = 0;
    for (int64_t i = 0; i < len; ++i)
      m = fmaxf(m, px[i * inner]);
    for (int64_t i = 0; i < len; ++i)
      s += expf(px[i * inner] - m);
    float logSum = logf(s);
    for (int64_t i = 0; i < len; ++i)
      py[i * inner] = log ? px[i * inner] - m - logSum : expf(px[i * inner] - m) / s;
  }
}

__global__ void whereKernel(const uint8_t *cond, const float *a, const float *b, float *y, int64_t n, Select s) {
  PARTITA_GRID_STRIDE(i, n) {
    int64_t rest = i, ic = 0, ia = 0, ib = 0;
    for (int d = s.rank - 1; d >= 0; --d) {
      int64_t k = rest % s.shape[d];
      rest /= s.shape[d];
      ic += k * s.strideCond[d];
      ia += k * s.strideA[d];
      ib += k * s.strideB[d];
    }
    y[i] = cond[ic] ? a[ia] : b[ib];
  }
}

template <typename T>
__global__ void gatherKernel(const T *table, int64_t rows, int64_t rowElems, const int64_t *indices, int64_t count,
                             T *out) {
  PARTITA_GRID_STRIDE(i, count * rowElems) {
    int64_t row = indices[i / rowElems];
    if (row < 0)
      row += rows;
    if (row < 0 || row >= rows)
      __trap(); // an index out of range: fail the stream, never write garbage
    out[i] = table[row * rowElems + i % rowElems];
  }
}

} // namespace

void layerNorm(const float *x, const float *g, int64_t gLen, const float *b, int64_t bLen, float *y, float *mean,
               float *rstd, int64_t rows, int64_t len, float epsilon, cudaStream_t stream) {
  if (rows > 0)
    layerNormKernel<<<static_cast<unsigned>(rows), kRowThreads, 0, stream>>>(x, g, gLen, b, bLen, y, mean, rstd,
                                                                             len, epsilon);
}

void softmax(const float *x, float *y, int64_t outer, int64_t len, int64_t inner, bool log, cudaStream_t stream) {
  if (outer * inner == 0)
    return;
  if (inner == 1)
    softmaxRowKernel<<<static_cast<unsigned>(outer), kRowThreads, 0, stream>>>(x, y, len, log);
  else
    softmaxStridedKernel<<<gridFor(outer * inner), kThreads, 0, stream>>>(x, y, outer, len, inner, log);
}

void where(const uint8_t *cond, const float *a, const float *b, float *y, int64_t n, const Select &s,
           cudaStream_t stream) {
  whereKernel<<<gridFor(n), kThreads, 0, stream>>>(cond, a, b, y, n, s);
}

void gatherRows(const void *table, int64_t rows, int64_t rowBytes, const int64_t *indices, int64_t count, void *out,
                cudaStream_t stream) {
  if (count == 0 || rowBytes == 0)
    return;
  if (rowBytes % 4 == 0)
    gatherKernel<<<gridFor(count * rowBytes / 4), kThreads, 0, stream>>>(
        static_cast<const uint32_t *>(table), rows, rowBytes / 4, indices, count, static_cast<uint32_t *>(out));
  else
    gatherKernel<<<gridFor(count * rowBytes), kThreads, 0, stream>>>(
        static_cast<const uint8_t *>(table), rows, rowBytes, indices, count, static_cast<uint8_t *>(out));
}

void copyRows(void *dst, size_t dstPitch, const void *src, size_t srcPitch, size_t width, size_t outer,
              cudaStream_t stream) {
  if (width && outer)
    cudaMemcpy2DAsync(dst, dstPitch, src, srcPitch, width, outer, cudaMemcpyDeviceToDevice, stream);
}

} // namespace partita::rt::gpu
