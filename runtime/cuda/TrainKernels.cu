//===- TrainKernels.cu - reductions, comparisons, casts, embedding grads ---===//
//
// Correct and deterministic first: a reduction is one thread per output
// element walking its reduced elements in row-major order, summing in
// float64 as the CPU's kernel does (adjacent outputs
// read adjacent inputs when the reduced dims lead, as a bias gradient's do),
// the embedding gradient one thread per column walking the ids in order.
//===----------------------------------------------------------------------===//
#include "runtime/cuda/Grid.h"
#include "runtime/cuda/TrainKernels.h"

namespace partita::rt::gpu {

namespace {

__global__ void reduceKernel(Reduce kind, const float *x, float *y, int64_t outputs, Reduction r) {
  PARTITA_GRID_STRIDE(o, outputs) {
    int64_t rest = o, base = 0;
    for (int d = r.keptRank - 1; d >= 0; --d) {
      base += (rest % r.keptShape[d]) * r.keptStride[d];
      rest /= r.keptShape[d];
    }
    double acc = kind == Reduce::Max ? -INFINITY : kind == Reduce::Min ? INFINITY : 0.0; // float64, as the CPU's
    for (int64_t k = 0; k < r.reducedCount; ++k) {
      int64_t left = k, at = base;
      for (int d = r.reducedRank - 1; d >= 0; --d) {
        at += (left % r.reducedShape[d]) * r.reducedStride[d];
        left /= r.reducedShape[d];
      }
      double v = x[at];
      acc = kind == Reduce::Max ? (v > acc || v != v ? v : acc)
            : kind == Reduce::Min ? (v < acc || v != v ? v : acc)
                                  : acc + v;
    }
    y[o] = static_cast<float>(kind == Reduce::Mean ? acc / static_cast<double>(r.reducedCount) : acc);
  }
}

__device__ int64_t loadInt(Number t, const void *p, int64_t i) {
  switch (t) {
  case Number::I64: return static_cast<const int64_t *>(p)[i];
  case Number::I32: return static_cast<const int32_t *>(p)[i];
  default: return static_cast<const uint8_t *>(p)[i] != 0;
  }
}

__global__ void convertKernel(Number from, Number to, const void *x, void *y, int64_t n) {
  PARTITA_GRID_STRIDE(i, n) {
    if (isFloating(to)) {
      storeFloat(to, y, i, isFloating(from) ? loadFloat(from, x, i) : static_cast<float>(loadInt(from, x, i)));
    } else { // from an integer or bool (the registration refuses floats to integers)
      int64_t v = loadInt(from, x, i);
      switch (to) {
      case Number::I64: static_cast<int64_t *>(y)[i] = v; break;
      case Number::I32: static_cast<int32_t *>(y)[i] = static_cast<int32_t>(v); break;
      default: static_cast<uint8_t *>(y)[i] = v != 0; break;
      }
    }
  }
}

__global__ void equalKernel(Number t, const void *a, const void *b, uint8_t *y, int64_t n, Broadcast s) {
  PARTITA_GRID_STRIDE(i, n) {
    int64_t ia, ib;
    s.offsets(i, ia, ib);
    y[i] = isFloating(t) ? loadFloat(t, a, ia) == loadFloat(t, b, ib) : loadInt(t, a, ia) == loadInt(t, b, ib);
  }
}

__global__ void notKernel(const uint8_t *x, uint8_t *y, int64_t n) {
  PARTITA_GRID_STRIDE(i, n) y[i] = x[i] == 0;
}

__global__ void embeddingGradKernel(const int64_t *ids, int64_t count, const float *dy, float *table, int64_t rows,
                                    int64_t width, int64_t offset) {
  PARTITA_GRID_STRIDE(c, width) {
    for (int64_t k = 0; k < count; ++k) {
      int64_t row = ids[k] - offset;
      if (row >= 0 && row < rows)
        table[row * width + c] += dy[k * width + c];
    }
  }
}

} // namespace

void reduce(Reduce kind, const float *x, float *y, int64_t outputs, const Reduction &r, cudaStream_t stream) {
  if (outputs > 0)
    reduceKernel<<<gridFor(outputs), kThreads, 0, stream>>>(kind, x, y, outputs, r);
}

void convert(Number from, Number to, const void *x, void *y, int64_t n, cudaStream_t stream) {
  if (n > 0)
    convertKernel<<<gridFor(n), kThreads, 0, stream>>>(from, to, x, y, n);
}

void equal(Number type, const void *a, const void *b, uint8_t *y, int64_t n, const Broadcast &s, cudaStream_t stream) {
  if (n > 0)
    equalKernel<<<gridFor(n), kThreads, 0, stream>>>(type, a, b, y, n, s);
}

void logicalNot(const uint8_t *x, uint8_t *y, int64_t n, cudaStream_t stream) {
  if (n > 0)
    notKernel<<<gridFor(n), kThreads, 0, stream>>>(x, y, n);
}

void embeddingGrad(const int64_t *ids, int64_t count, const float *dy, float *table, int64_t rows, int64_t width,
                   int64_t offset, cudaStream_t stream) {
  cudaMemsetAsync(table, 0, static_cast<size_t>(rows * width) * sizeof(float), stream);
  if (width > 0)
    embeddingGradKernel<<<gridFor(width), kThreads, 0, stream>>>(ids, count, dy, table, rows, width, offset);
}

} // namespace partita::rt::gpu
