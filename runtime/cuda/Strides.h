//===- Strides.h - numpy broadcasting as per-dim strides, for the CUDA kernels ===//
#pragma once
#include "compiler/ir/Tensor.h"
#include "runtime/cuda/TrainKernels.h"
#include <vector>
#include <cstdint>

namespace partita::rt::cuda {

/// `in` broadcast to `out` (right-aligned, numpy's rule): the element stride
/// of each of out's dims in `in`, 0 along a dim `in` lacks or has as 1.
inline void broadcastStrides(const Shape &in, const Shape &out, int64_t *stride) {
  int64_t step = 1;
  for (int d = static_cast<int>(out.size()) - 1, k = static_cast<int>(in.size()) - 1; d >= 0; --d, --k) {
    int64_t extent = k >= 0 ? in[k] : 1;
    stride[d] = extent == 1 ? 0 : step;
    step *= extent;
  }
}

/// Operands `a` and `b` broadcast to `out`, as the binary kernels read them.
inline gpu::Broadcast broadcastOf(const Shape &a, const Shape &b, const Shape &out) {
  gpu::Broadcast s;
  s.rank = static_cast<int>(out.size());
  for (int d = 0; d < s.rank; ++d)
    s.shape[d] = out[d];
  broadcastStrides(a, out, s.strideA);
  broadcastStrides(b, out, s.strideB);
  return s;
}

/// A reduction of a row-major `in` over the dims `reduced` marks, as the
/// reduce kernel walks it (TrainKernels.h): kept dims index the outputs in
/// order, reduced dims the elements each output sums.
inline gpu::Reduction reductionOf(const Shape &in, const std::vector<bool> &reduced) {
  gpu::Reduction r;
  std::vector<int64_t> stride(in.size(), 1);
  for (int d = static_cast<int>(in.size()) - 2; d >= 0; --d)
    stride[d] = stride[d + 1] * in[d + 1];
  for (size_t d = 0; d < in.size(); ++d) {
    if (reduced[d]) {
      r.reducedShape[r.reducedRank] = in[d];
      r.reducedStride[r.reducedRank++] = stride[d];
      r.reducedCount *= in[d];
    } else {
      r.keptShape[r.keptRank] = in[d];
      r.keptStride[r.keptRank++] = stride[d];
    }
  }
  return r;
}

} // namespace partita::rt::cuda
