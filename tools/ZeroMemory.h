//===- ZeroMemory.h - ZeRO's model states per rank, by its formula ---------===//
//
// Rajbhandari et al., "ZeRO: Memory Optimizations Toward Training Trillion
// Parameter Models" (2020), section 5: a rank of Nd data-parallel ranks
// training Ψ parameters with Adam holds per parameter 2 bytes of fp16
// parameters, 2 of gradients and K = 12 of optimizer state (fp32 master
// weights, momentum, variance) in mixed precision:
//   stage 0 (Pos none) (2 + 2 + K)Ψ      stage 1 (Pos)    (2 + 2)Ψ + KΨ/Nd
//   stage 2 (Pos+g)    2Ψ + (2 + K)Ψ/Nd  stage 3 (Pos+g+p) (2 + 2 + K)Ψ/Nd
// This build trains in fp32: 4 + 4 bytes of parameters and gradients, K = 8
// (the two moments; the parameters are their own master weights).
//===----------------------------------------------------------------------===//
#pragma once
#include <cstdint>

namespace partita {

struct StateBytesPerParameter {
  const char *name;
  double params, grads, optimizer;
};
inline constexpr StateBytesPerParameter kMixedPrecision{"mixed precision, K = 12", 2, 2, 12};
inline constexpr StateBytesPerParameter kFp32{"fp32, K = 8", 4, 4, 8};

/// One rank's model states in bytes.
struct ModelStates {
  double params = 0, grads = 0, optimizer = 0;
  double total() const { return params + grads + optimizer; }
};

/// ZeRO stage `stage` (0-3) with `psi` parameters on `nd` data-parallel ranks.
inline ModelStates zeroModelStates(double psi, int64_t nd, int stage, const StateBytesPerParameter &b) {
  double n = static_cast<double>(nd < 1 ? 1 : nd);
  return {psi * b.params / (stage >= 3 ? n : 1), psi * b.grads / (stage >= 2 ? n : 1),
          psi * b.optimizer / (stage >= 1 ? n : 1)};
}

} // namespace partita
