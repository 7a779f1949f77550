//===- Grid.h - launch shapes and element access the CUDA kernels share ----===//
// (nvcc only)
#pragma once
#include "runtime/cuda/GpuKernels.h"
#include <cstdint>

namespace partita::rt::gpu {

/// Threads per block of the elementwise and row kernels.
constexpr int kThreads = 256;

/// Blocks for one thread per element up to 2^20 blocks (a grid-stride loop
/// covers the rest); at least one.
inline int gridFor(int64_t n) {
  int64_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<int>(blocks < 1 ? 1 : (blocks > (1 << 20) ? (1 << 20) : blocks));
}

__device__ inline bool isFloating(Number t) { return t == Number::F32 || t == Number::BF16 || t == Number::F16; }

/// Element i of a float32, bf16 or fp16 buffer, widened.
__device__ inline float loadFloat(Number t, const void *p, int64_t i) {
  switch (t) {
  case Number::F32: return static_cast<const float *>(p)[i];
  case Number::BF16: return bf16ToFloat(static_cast<const uint16_t *>(p)[i]);
  default: return halfToFloat(static_cast<const uint16_t *>(p)[i]);
  }
}

/// Element i of a float32, bf16 or fp16 buffer set to v, rounded to nearest even.
__device__ inline void storeFloat(Number t, void *p, int64_t i, float v) {
  switch (t) {
  case Number::F32: static_cast<float *>(p)[i] = v; break;
  case Number::BF16: static_cast<uint16_t *>(p)[i] = floatToBf16(v); break;
  default: static_cast<uint16_t *>(p)[i] = floatToHalf(v); break;
  }
}

} // namespace partita::rt::gpu

/// for (i over [0, n)) with a grid-stride step and 64-bit indices.
#define PARTITA_GRID_STRIDE(i, n)                                                                                  \
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < (n);                           \
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
