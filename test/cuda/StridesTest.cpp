//===- StridesTest.cpp - the CUDA kernels' index math, checked on the host ----===//
//
// The broadcast strides the elementwise, Where, Equal and Expand kernels read
// through, against the CPU runtime's BroadcastIndexer; the reduction layout
// the reduce kernel walks, walked here as the kernel does, against a naive
// reduction over multi-indices.
//===----------------------------------------------------------------------===//
#include "compiler/ops/Broadcast.h"
#include "runtime/cuda/Strides.h"
#include <gtest/gtest.h>
#include <random>

using namespace partita;
using namespace partita::rt::cuda;

TEST(CudaStrides, BroadcastStridesIndexAsNumpyDoes) {
  const std::pair<Shape, Shape> cases[] = {{{4, 1}, {3, 4, 5}}, {{5}, {3, 4, 5}}, {{3, 1, 5}, {3, 4, 5}},
                                           {{1}, {2, 3}},       {{2, 3}, {2, 3}}, {{1, 4, 1}, {2, 4, 6}}};
  for (const auto &[in, out] : cases) {
    int64_t stride[rt::gpu::kMaxDims] = {};
    broadcastStrides(in, out, stride);
    BroadcastIndexer reference(in, out);
    for (int64_t i = 0; i < numElements(out); ++i) {
      int64_t rest = i, at = 0; // the kernels' walk: last dim fastest
      for (int d = static_cast<int>(out.size()) - 1; d >= 0; --d) {
        at += (rest % out[d]) * stride[d];
        rest /= out[d];
      }
      ASSERT_EQ(at, reference(i)) << "element " << i << " of in rank " << in.size();
      int64_t a = -1, b = -1; // the binary kernels' walk: `in` against an operand of out's shape
      broadcastOf(in, out, out).offsets(i, a, b);
      ASSERT_EQ(a, reference(i)) << "element " << i;
      ASSERT_EQ(b, i) << "element " << i;
    }
  }
}

TEST(CudaStrides, ReductionLayoutsSumWhatANaiveReductionSums) {
  const Shape shape = {3, 4, 5, 2};
  std::vector<double> x(120);
  std::mt19937 rng(3);
  for (double &v : x)
    v = std::uniform_real_distribution<double>(-1, 1)(rng);
  for (int mask = 1; mask < 16; ++mask) { // every non-empty set of reduced dims
    std::vector<bool> reduced(4);
    for (int d = 0; d < 4; ++d)
      reduced[d] = mask >> d & 1;
    rt::gpu::Reduction r = reductionOf(shape, reduced);
    // Reference: every input element added to the output its kept dims name.
    Shape kept;
    for (int d = 0; d < 4; ++d)
      if (!reduced[d])
        kept.push_back(shape[d]);
    std::vector<double> want(static_cast<size_t>(numElements(kept)), 0.0);
    for (int64_t i = 0; i < 120; ++i) {
      int64_t rest = i, o = 0, scale = 1;
      for (int d = 3; d >= 0; --d) {
        int64_t k = rest % shape[d];
        rest /= shape[d];
        if (!reduced[d]) {
          o += k * scale;
          scale *= shape[d];
        }
      }
      want[o] += x[i];
    }
    for (int64_t o = 0; o < static_cast<int64_t>(want.size()); ++o) { // the kernel's walk
      int64_t rest = o, base = 0;
      for (int d = r.keptRank - 1; d >= 0; --d) {
        base += (rest % r.keptShape[d]) * r.keptStride[d];
        rest /= r.keptShape[d];
      }
      double sum = 0;
      for (int64_t k = 0; k < r.reducedCount; ++k) {
        int64_t left = k, at = base;
        for (int d = r.reducedRank - 1; d >= 0; --d) {
          at += (left % r.reducedShape[d]) * r.reducedStride[d];
          left /= r.reducedShape[d];
        }
        sum += x[at];
      }
      ASSERT_NEAR(sum, want[o], 1e-12) << "reduced mask " << mask << ", output " << o;
    }
  }
}
