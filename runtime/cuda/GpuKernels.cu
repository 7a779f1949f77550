//===- GpuKernels.cu - elementwise, casts, AdamW and the loop's sums ------===//
//
// One thread per element, grid-stride (64-bit indices: a flat ZeRO buffer
// can pass 2^31 elements). Every formula is a shared __host__ __device__
// function, so the GPU computes what the CPU does (up to the compilers'
// contraction of a*b+c into one rounding, which -fmad=false turns off).
//===----------------------------------------------------------------------===//
#include "runtime/cuda/GpuKernels.h"
#include "runtime/cuda/Grid.h"

namespace partita::rt::gpu {

namespace {

#define PARTITA_GPU_FUNCTOR(name, id, expr)                                                                        \
  struct id##Fn {                                                                                                  \
    __device__ float operator()(float x) const { return expr; }                                                    \
  };
PARTITA_UNARY_OPS(PARTITA_GPU_FUNCTOR)
#undef PARTITA_GPU_FUNCTOR
#define PARTITA_GPU_FUNCTOR(name, id, expr)                                                                        \
  struct id##Fn {                                                                                                  \
    __device__ float operator()(float a, float b) const { return expr; }                                           \
  };
PARTITA_BINARY_OPS(PARTITA_GPU_FUNCTOR)
#undef PARTITA_GPU_FUNCTOR

template <typename F> __global__ void unaryKernel(F f, const float *x, float *y, int64_t n) {
  PARTITA_GRID_STRIDE(i, n) y[i] = f(x[i]);
}

template <typename F> __global__ void binarySameShape(F f, const float *a, const float *b, float *y, int64_t n) {
  PARTITA_GRID_STRIDE(i, n) y[i] = f(a[i], b[i]);
}

template <typename F> __global__ void binaryBroadcast(F f, const float *a, const float *b, float *y, int64_t n,
                                                      Broadcast s) {
  PARTITA_GRID_STRIDE(i, n) {
    int64_t ia, ib;
    s.offsets(i, ia, ib);
    y[i] = f(a[ia], b[ib]);
  }
}

template <typename T> __global__ void transposeKernel(const T *x, T *y, Permute p, int64_t n) {
  PARTITA_GRID_STRIDE(i, n) {
    int64_t rest = i, at = 0;
    for (int d = p.rank - 1; d >= 0; --d) {
      at += (rest % p.shape[d]) * p.inputStride[d];
      rest /= p.shape[d];
    }
    y[i] = x[at];
  }
}

__global__ void adamwKernel(AdamW a) {
  AdamWStep step = adamwStep(*a.lr, *a.bc1, *a.bc2, a.beta1, a.beta2, a.epsilon, a.weightDecay,
                             a.gradScale ? *a.gradScale : 1.0f);
  PARTITA_GRID_STRIDE(i, a.n) {
    float m = a.m[i], v = a.v[i];
    a.pOut[i] = adamwUpdate(step, a.p[i], a.g[i], m, v);
    a.mOut[i] = m;
    a.vOut[i] = v;
  }
}

__global__ void accumulateKernel(float *sum, const void *g, Number gType, int64_t n, bool first) {
  PARTITA_GRID_STRIDE(i, n) sum[i] = (first ? 0.0f : sum[i]) + loadFloat(gType, g, i);
}

__global__ void roundKernel(void *h, const float *sum, Number hType, int64_t n) {
  PARTITA_GRID_STRIDE(i, n) storeFloat(hType, h, i, sum[i]);
}

__global__ void addKernel(const void *x, void *y, Number type, int64_t n) {
  PARTITA_GRID_STRIDE(i, n) storeFloat(type, y, i, loadFloat(type, x, i) + loadFloat(type, y, i));
}

} // namespace

void transpose(const void *x, void *y, int elementBytes, const Permute &p, int64_t n, cudaStream_t stream) {
  switch (elementBytes) {
  case 1: transposeKernel<<<gridFor(n), kThreads, 0, stream>>>(static_cast<const uint8_t *>(x), static_cast<uint8_t *>(y), p, n); break;
  case 2: transposeKernel<<<gridFor(n), kThreads, 0, stream>>>(static_cast<const uint16_t *>(x), static_cast<uint16_t *>(y), p, n); break;
  case 4: transposeKernel<<<gridFor(n), kThreads, 0, stream>>>(static_cast<const uint32_t *>(x), static_cast<uint32_t *>(y), p, n); break;
  default: transposeKernel<<<gridFor(n), kThreads, 0, stream>>>(static_cast<const uint64_t *>(x), static_cast<uint64_t *>(y), p, n); break;
  }
}

void copy(void *dst, const void *src, size_t bytes, cudaStream_t stream) {
  if (bytes)
    cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream);
}

void unary(Unary op, const float *x, float *y, int64_t n, cudaStream_t stream) {
  switch (op) {
#define PARTITA_GPU_CASE(name, id, expr)                                                                           \
  case Unary::id: unaryKernel<<<gridFor(n), kThreads, 0, stream>>>(id##Fn{}, x, y, n); break;
    PARTITA_UNARY_OPS(PARTITA_GPU_CASE)
#undef PARTITA_GPU_CASE
  }
}

void binary(Binary op, const float *a, const float *b, float *y, int64_t n, const Broadcast *shape,
            cudaStream_t stream) {
  switch (op) {
#define PARTITA_GPU_CASE(name, id, expr)                                                                           \
  case Binary::id:                                                                                                 \
    if (shape)                                                                                                     \
      binaryBroadcast<<<gridFor(n), kThreads, 0, stream>>>(id##Fn{}, a, b, y, n, *shape);                        \
    else                                                                                                           \
      binarySameShape<<<gridFor(n), kThreads, 0, stream>>>(id##Fn{}, a, b, y, n);                                \
    break;
    PARTITA_BINARY_OPS(PARTITA_GPU_CASE)
#undef PARTITA_GPU_CASE
  }
}

void adamw(const AdamW &args, cudaStream_t stream) {
  adamwKernel<<<gridFor(args.n), kThreads, 0, stream>>>(args);
}

void accumulate(float *sum, const void *g, Number gType, int64_t n, bool first, cudaStream_t stream) {
  accumulateKernel<<<gridFor(n), kThreads, 0, stream>>>(sum, g, gType, n, first);
}

void roundTo(void *h, const float *sum, Number hType, int64_t n, cudaStream_t stream) {
  roundKernel<<<gridFor(n), kThreads, 0, stream>>>(h, sum, hType, n);
}

void add(const void *x, void *y, Number type, int64_t n, cudaStream_t stream) {
  addKernel<<<gridFor(n), kThreads, 0, stream>>>(x, y, type, n);
}

} // namespace partita::rt::gpu
