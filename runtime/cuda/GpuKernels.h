//===- GpuKernels.h - the CUDA kernels' launchers ---------------------------===//
//
// Plain C++ (no LLVM, no IR): GpuKernels.cu is compiled by nvcc and the
// Kernel classes that call these (CudaKernels.cpp) by the host compiler.
// Each launcher enqueues on `stream` and returns; errors surface through the
// device (CudaDevice::check). Buffers are device addresses. The arithmetic is
// runtime/kernels/ElementMath.h's and compiler/ir/FloatBits.h's, as on the CPU.
//===----------------------------------------------------------------------===//
#pragma once
#include "runtime/kernels/ElementMath.h"
#include <cstdint>
#include <cuda_runtime_api.h>

namespace partita::rt::gpu {

#define PARTITA_GPU_OP_ID(name, id, expr) id,
enum class Unary : int { PARTITA_UNARY_OPS(PARTITA_GPU_OP_ID) };
enum class Binary : int { PARTITA_BINARY_OPS(PARTITA_GPU_OP_ID) };
#undef PARTITA_GPU_OP_ID

/// Element kinds the kernels read and write (a cast's, a comparison's, the
/// loop kernels' float32 and half sums).
enum class Number : int { F32, BF16, F16, I64, I32, Bool };

/// numpy broadcasting of two operands to an output of `rank` dims: an
/// operand's stride is 0 along the dims it is broadcast over.
constexpr int kMaxDims = 8;
struct Broadcast {
  int rank = 0;
  int64_t shape[kMaxDims] = {};
  int64_t strideA[kMaxDims] = {}, strideB[kMaxDims] = {};
  /// The operands' elements output element i reads (last dim fastest).
  PARTITA_HD void offsets(int64_t i, int64_t &a, int64_t &b) const {
    a = b = 0;
    for (int d = rank - 1; d >= 0; --d) {
      int64_t k = i % shape[d];
      i /= shape[d];
      a += k * strideA[d];
      b += k * strideB[d];
    }
  }
};

/// y = x with its dims permuted: output dim d walks input dim perm[d], whose
/// stride (elements) is inputStride[d]; elements of 1, 2, 4 or 8 bytes.
struct Permute {
  int rank = 0;
  int64_t shape[kMaxDims] = {};       // the output's
  int64_t inputStride[kMaxDims] = {}; // per output dim
};
void transpose(const void *x, void *y, int elementBytes, const Permute &p, int64_t n, cudaStream_t stream);
/// A device-to-device copy on `stream` (a view that must be its own buffer).
void copy(void *dst, const void *src, size_t bytes, cudaStream_t stream);

void unary(Unary op, const float *x, float *y, int64_t n, cudaStream_t stream);
/// y = a op b over n outputs; `shape` null when a, b and y have one shape.
void binary(Binary op, const float *a, const float *b, float *y, int64_t n, const Broadcast *shape,
            cudaStream_t stream);

/// partita.AdamW over flat float32 buffers; the scalars are device memory
/// (written by the training loop between steps: the host never reads them).
struct AdamW {
  const float *lr, *bc1, *bc2, *gradScale; // gradScale null: 1
  float beta1, beta2, epsilon, weightDecay;
  const float *p, *g, *m, *v;
  float *pOut, *mOut, *vOut;
  int64_t n;
};
void adamw(const AdamW &args, cudaStream_t stream);

/// The training loop's kernels (runtime/kernels/LoopKernels.h).
void accumulate(float *sum, const void *g, Number gType, int64_t n, bool first, cudaStream_t stream);
void roundTo(void *h, const float *sum, Number hType, int64_t n, cudaStream_t stream);
void add(const void *x, void *y, Number type, int64_t n, cudaStream_t stream);

} // namespace partita::rt::gpu
