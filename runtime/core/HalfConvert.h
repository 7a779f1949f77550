//===- HalfConvert.h - float32 <-> bf16 / fp16 rows -----------------------===//
//
// Round to nearest even, as Tensor.h's scalar conversions (floatToBf16,
// floatToHalf), which they match bit for bit: fp16 with the CPU's F16C
// instructions where it has them (checked at run time), bf16 inline. The
// cast kernel, the fused elementwise kernel (mixed precision's round trips),
// MPI's half sums and the pipeline's shared-gradient sum share them.
//===----------------------------------------------------------------------===//
#pragma once
#include "compiler/ir/DType.h"
#include <cstdint>

namespace partita::rt {

/// y[i] = x[i] rounded to `half` (bf16 or fp16) for i in [b, e).
void roundToHalfRow(DType half, const float *x, uint16_t *y, int64_t b, int64_t e);
/// y[i] = x[i] (of `half`) widened to float32 for i in [b, e).
void widenHalfRow(DType half, const uint16_t *x, float *y, int64_t b, int64_t e);
/// y[i] = x[i] + y[i] (the larger of them with `max`) for i in [0, n), both
/// of `half`: computed in float32, rounded once (as NCCL sums half values).
void combineHalfRows(DType half, const uint16_t *x, uint16_t *y, int64_t n, bool max = false);

} // namespace partita::rt
