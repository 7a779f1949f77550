//===- TrainKernels.h - the CUDA kernels a training step adds --------------===//
//
// Plain C++ launchers (TrainKernels.cu is nvcc's), as GpuKernels.h: the
// reductions (a bias's gradient, a mean), Equal and Not (the loss's masks),
// casts to and from integer and bool values, and the embedding's gradient.
//===----------------------------------------------------------------------===//
#pragma once
#include "runtime/cuda/GpuKernels.h"

namespace partita::rt::gpu {

enum class Reduce : int { Sum, Mean, Max, Min };
/// An output element walks `reducedCount` input elements: its kept dims
/// index the input through `keptStride`, the reduced ones through
/// `reducedShape`/`reducedStride` (row-major over the reduced dims).
struct Reduction {
  int keptRank = 0, reducedRank = 0;
  int64_t keptShape[kMaxDims] = {}, keptStride[kMaxDims] = {};
  int64_t reducedShape[kMaxDims] = {}, reducedStride[kMaxDims] = {};
  int64_t reducedCount = 1;
};
void reduce(Reduce kind, const float *x, float *y, int64_t outputs, const Reduction &r, cudaStream_t stream);

/// y = x converted; a float to an integer or bool is not among them (the
/// registration refuses it, as ONNX leaves out-of-range values undefined).
void convert(Number from, Number to, const void *x, void *y, int64_t n, cudaStream_t stream);
/// y (bool) = a == b, each read through its broadcast strides.
void equal(Number type, const void *a, const void *b, uint8_t *y, int64_t n, const Broadcast &s, cudaStream_t stream);
void logicalNot(const uint8_t *x, uint8_t *y, int64_t n, cudaStream_t stream);

/// partita.EmbeddingGrad: table rows [offset, offset + rows) of width
/// `width` get the sum of dy's rows whose id falls there, ids in order (one
/// thread per column: deterministic); other rows zero.
void embeddingGrad(const int64_t *ids, int64_t count, const float *dy, float *table, int64_t rows, int64_t width,
                   int64_t offset, cudaStream_t stream);

} // namespace partita::rt::gpu
