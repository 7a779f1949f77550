//===- ReduceKernels.cpp - ReduceSum/Mean/Max/Min over any axes (f32) -----===//
//
// The reduced dims are walked as [outer, reduced, inner] blocks after
// permuting nothing: the input is viewed as a row-major array and each output
// element accumulates (in float64 for accuracy on long reductions) the inputs
// that map to it (max and min: in float, exactly).
//===----------------------------------------------------------------------===//
#include "compiler/ops/OpRegistry.h"
#include "runtime/cpu/CpuKernels.h"
#include "runtime/kernels/NodeShapes.h"
#include "runtime/cpu/FastMath.h"
#include "runtime/cpu/Parallel.h"
#include <algorithm>
#include <limits>

namespace partita::rt::cpu {

namespace {

enum class Reduction { Sum, Mean, Max, Min };

class ReduceKernel final : public Kernel {
public:
  ReduceKernel(const Shape &in, const std::vector<bool> &reduced, Reduction kind)
      : mean_(kind == Reduction::Mean), extremum_(kind == Reduction::Max || kind == Reduction::Min),
        max_(kind == Reduction::Max) {
    // Collapse into alternating kept/reduced runs: out index = sum over kept dims.
    int64_t rank = static_cast<int64_t>(in.size());
    std::vector<int64_t> inStrides(rank, 1);
    for (int64_t d = rank - 2; d >= 0; --d)
      inStrides[d] = inStrides[d + 1] * in[d + 1];
    int64_t outStride = 1;
    std::vector<int64_t> outStrides(rank, 0);
    for (int64_t d = rank - 1; d >= 0; --d)
      if (!reduced[d]) {
        outStrides[d] = outStride;
        outStride *= in[d];
      }
    outCount_ = outStride;
    count_ = 1;
    for (int64_t d = 0; d < rank; ++d)
      if (reduced[d])
        count_ *= in[d];
    in_ = in;
    outStrides_ = outStrides;
    // Fast path: only the trailing dims are reduced (rows of `count_`).
    trailing_ = true;
    bool seenReduced = false;
    for (int64_t d = 0; d < rank; ++d) {
      if (reduced[d])
        seenReduced = true;
      else if (seenReduced)
        trailing_ = false;
    }
  }

  llvm::Error run(KernelContext &ctx) override {
    if (extremum_)
      return runExtremum(ctx);
    const float *x = ctx.inputs[0].as<float>();
    float *y = ctx.outputs[0].as<float>();
    double div = mean_ ? static_cast<double>(count_) : 1.0;
    if (trailing_) {
      int64_t len = count_;
      parallelFor(outCount_, 16, [&](int64_t b, int64_t e) {
        for (int64_t o = b; o < e; ++o) {
          const float *row = x + o * len;
          y[o] = static_cast<float>(laneSum<double>(len, [&](int64_t i) { return row[i]; }) / div);
        }
      });
      return llvm::Error::success();
    }
    std::vector<double> acc(static_cast<size_t>(outCount_), 0.0);
    forEachInputRow(x, [&](const float *px, int64_t inner, int64_t out, int64_t s) {
      for (int64_t i = 0; i < inner; ++i)
        acc[out + i * s] += px[i];
    });
    for (int64_t o = 0; o < outCount_; ++o)
      y[o] = static_cast<float>(acc[o] / div);
    return llvm::Error::success();
  }

private:
  /// The general (non-trailing) walk: visit(row, inner, out, s) for every
  /// innermost row of the input, where element i of the row reduces into
  /// output out + i·s.
  template <typename F> void forEachInputRow(const float *x, F visit) const {
    int64_t n = numElements(in_), rank = static_cast<int64_t>(in_.size()), inner = in_.back();
    for (int64_t row = 0; row < n / std::max<int64_t>(inner, 1); ++row) {
      int64_t rem = row, out = 0;
      for (int64_t d = rank - 2; d >= 0; --d) {
        out += (rem % in_[d]) * outStrides_[d];
        rem /= in_[d];
      }
      visit(x + row * inner, inner, out, outStrides_[rank - 1]);
    }
  }

  /// Max or min; a NaN anywhere makes the result NaN, as in ONNX Runtime.
  llvm::Error runExtremum(KernelContext &ctx) {
    return max_ ? extremum<true>(ctx) : extremum<false>(ctx);
  }

  template <bool Max> static float better(float a, float b) { return Max ? (b > a ? b : a) : (b < a ? b : a); }

  template <bool Max> llvm::Error extremum(KernelContext &ctx) {
    const float *x = ctx.inputs[0].as<float>();
    float *y = ctx.outputs[0].as<float>();
    const float init = Max ? -std::numeric_limits<float>::infinity() : std::numeric_limits<float>::infinity();
    if (trailing_) {
      int64_t len = count_;
      parallelFor(outCount_, 16, [&](int64_t b, int64_t e) {
        for (int64_t o = b; o < e; ++o) {
          const float *row = x + o * len;
          float r = init;
          int anyNan = 0;
          if constexpr (Max) {
#pragma omp simd reduction(max : r) reduction(| : anyNan)
            for (int64_t i = 0; i < len; ++i) {
              r = row[i] > r ? row[i] : r;
              anyNan |= row[i] != row[i];
            }
          } else {
#pragma omp simd reduction(min : r) reduction(| : anyNan)
            for (int64_t i = 0; i < len; ++i) {
              r = row[i] < r ? row[i] : r;
              anyNan |= row[i] != row[i];
            }
          }
          y[o] = anyNan ? std::numeric_limits<float>::quiet_NaN() : r;
        }
      });
      return llvm::Error::success();
    }
    std::vector<float> acc(static_cast<size_t>(outCount_), init);
    std::vector<char> nan(static_cast<size_t>(outCount_), 0);
    forEachInputRow(x, [&](const float *px, int64_t inner, int64_t out, int64_t s) {
      for (int64_t i = 0; i < inner; ++i) {
        acc[out + i * s] = better<Max>(acc[out + i * s], px[i]);
        nan[out + i * s] |= px[i] != px[i];
      }
    });
    for (int64_t o = 0; o < outCount_; ++o)
      y[o] = nan[o] ? std::numeric_limits<float>::quiet_NaN() : acc[o];
    return llvm::Error::success();
  }

  bool mean_, extremum_, max_, trailing_ = false;
  int64_t outCount_ = 1, count_ = 1;
  Shape in_;
  std::vector<int64_t> outStrides_;
};

llvm::Expected<std::unique_ptr<Kernel>> makeReduce(const Node &n, Reduction kind) {
  if (n.input(0)->type().dtype != DType::F32 || n.input(0)->type().rank() == 0)
    return makeFallbackKernel(n);
  const Shape &s = n.input(0)->type().shape;
  std::vector<bool> reduced = reducedDims(n);
  if (reduced.empty()) // axes computed at run time
    return makeFallbackKernel(n);
  if (numElements(s) == 0)
    return makeFallbackKernel(n); // an empty max/min has no value to start from
  return std::unique_ptr<Kernel>(new ReduceKernel(s, reduced, kind));
}

} // namespace

void registerReduceKernels(KernelRegistry &r) {
  r.add("ReduceSum", kCpuDevice, [](const Node &n) { return makeReduce(n, Reduction::Sum); });
  r.add("ReduceMean", kCpuDevice, [](const Node &n) { return makeReduce(n, Reduction::Mean); });
  r.add("ReduceMax", kCpuDevice, [](const Node &n) { return makeReduce(n, Reduction::Max); });
  r.add("ReduceMin", kCpuDevice, [](const Node &n) { return makeReduce(n, Reduction::Min); });
}

} // namespace partita::rt::cpu
