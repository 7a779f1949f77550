//===- RowKernels.h - the CUDA kernels over rows: norms, softmax, gathers --===//
//
// Plain C++ launchers (RowKernels.cu is nvcc's), as GpuKernels.h: each
// enqueues on `stream`. A row is `len` contiguous elements (the normalized
// or softmax axis last); a softmax over an inner axis walks it with a stride.
//===----------------------------------------------------------------------===//
#pragma once
#include "runtime/cuda/GpuKernels.h"

namespace partita::rt::gpu {

/// LayerNormalization over rows of `len`: y = (x - mean) rstd g + b (g and b
/// tile the row: element i reads g[i % gLen], b[i % bLen]; b may be null);
/// mean and rstd per row written when not null.
void layerNorm(const float *x, const float *g, int64_t gLen, const float *b, int64_t bLen, float *y, float *mean,
               float *rstd, int64_t rows, int64_t len, float epsilon, cudaStream_t stream);
/// Softmax (log-softmax with `log`) over the middle of [outer, len, inner].
void softmax(const float *x, float *y, int64_t outer, int64_t len, int64_t inner, bool log, cudaStream_t stream);
/// y = cond ? a : b, each read through its broadcast strides (cond one byte).
struct Select {
  int rank = 0;
  int64_t shape[kMaxDims] = {};
  int64_t strideCond[kMaxDims] = {}, strideA[kMaxDims] = {}, strideB[kMaxDims] = {};
};
void where(const uint8_t *cond, const float *a, const float *b, float *y, int64_t n, const Select &s,
           cudaStream_t stream);
/// out[i] = table row indices[i] (rows of `rowBytes`; a negative index counts
/// from the end). An index outside [-rows, rows) stops the kernel (a trap):
/// the device's next finishWork fails, never a row of garbage.
void gatherRows(const void *table, int64_t rows, int64_t rowBytes, const int64_t *indices, int64_t count, void *out,
                cudaStream_t stream);
/// A block of `outer` rows of `width` bytes, `srcPitch` apart in the source
/// and `dstPitch` in the destination (Split's and Concat's pieces).
void copyRows(void *dst, size_t dstPitch, const void *src, size_t srcPitch, size_t width, size_t outer,
              cudaStream_t stream);

} // namespace partita::rt::gpu
