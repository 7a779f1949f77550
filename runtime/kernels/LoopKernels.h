//===- LoopKernels.h - the training loop's own device kernels -------------===//
//
// What the training loop computes on a device outside its programs: the
// sums of a step's micro-batch gradients and the pipeline's shared-weight
// gradient sum. Host code never dereferences device memory (Device.h), so
// these run as kernels of the device, on device addresses; each backend
// registers its set with its kernels (KernelRegistry::setLoopKernels).
//===----------------------------------------------------------------------===//
#pragma once
#include "compiler/ir/DType.h"
#include "runtime/core/Device.h"
#include <cstdint>

namespace partita::rt {

struct LoopKernels {
  /// sum[k] = (first ? 0 : sum[k]) + widen(g[k]) for k < n: `sum` float32,
  /// `g` float32, bf16 or fp16 (Megatron's float32 gradient accumulation).
  void (*accumulate)(Device &device, void *sum, const void *g, DType gType, int64_t n, bool first);
  /// h[k] = sum[k] rounded to `hType` (bf16 or fp16), for k < n.
  void (*round)(Device &device, void *h, const void *sum, DType hType, int64_t n);
  /// y[k] = x[k] + y[k] for k < n, both of `type` (float32, or a half type
  /// summed in float32 and rounded once).
  void (*add)(Device &device, const void *x, void *y, DType type, int64_t n);
};

} // namespace partita::rt
