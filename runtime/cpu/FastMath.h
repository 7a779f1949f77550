//===- FastMath.h - the CPU kernels' math helpers --------------------------===//
//
// Deterministic vectorizable sums, and the shared per-element functions
// (ElementMath.h) under the CPU kernels' namespace.
//===----------------------------------------------------------------------===//
#pragma once
#include "runtime/kernels/ElementMath.h"
#include <cmath>
#include <cstdint>

namespace partita::rt::cpu {

/// Sums with 16 independent partial sums (one vector of lanes): a single
/// running sum is a dependency chain GCC may not vectorize without
/// -ffast-math. The order is fixed, so results are deterministic.
template <typename Acc, typename F> inline Acc laneSum(int64_t n, F term) {
  constexpr int64_t kLanes = 16;
  Acc part[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int64_t j = 0; j < kLanes; ++j)
      part[j] += static_cast<Acc>(term(i + j));
  Acc total = 0;
  for (; i < n; ++i)
    total += static_cast<Acc>(term(i));
  for (int64_t j = 0; j < kLanes; ++j)
    total += part[j];
  return total;
}

// The per-element functions are every device's (runtime/kernels/ElementMath.h).
using rt::fastExp;
using rt::fastTanh;
using rt::geluErf;
using rt::geluTanh;
using rt::power;
using rt::relu;
using rt::sigmoid;

} // namespace partita::rt::cpu
