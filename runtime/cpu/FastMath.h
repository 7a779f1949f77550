//===- FastMath.h - vectorizable float exp/tanh/erf-free GELU -------------===//
//
// libm's expf/tanhf are scalar calls that block vectorization. These are
// branch-free (Cephes-style range reduction + polynomial, ~2 ulp) so the
// compiler vectorizes the loops that call them. Without -ffast-math GCC does
// not vectorize fminf/fmaxf/nearbyintf/copysignf, hence the ternaries and
// the round-to-nearest-even by adding and removing 1.5 * 2^23 (NaN stays NaN).
//===----------------------------------------------------------------------===//
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>

namespace partita::rt::cpu {

inline float fastExp(float x) {
  x = x < -87.3f ? -87.3f : (x > 88.7f ? 88.7f : x);
  constexpr float kRound = 12582912.0f;                 // 1.5 * 2^23
  float n = (x * 1.44269504088896341f + kRound) - kRound; // nearest integer to x / ln 2
  float r = x - n * 0.693359375f + n * 2.12194440e-4f;  // x - n ln 2, in two parts
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  int32_t bits = (static_cast<int32_t>(n) + 127) << 23; // 2^n
  float scale;
  std::memcpy(&scale, &bits, 4);
  return p * scale;
}

inline float fastTanh(float x) {
  float e = fastExp(x < 0 ? 2.0f * x : -2.0f * x); // exp(-2|x|) in (0, 1]: no overflow
  float t = (1.0f - e) / (1.0f + e);
  return x < 0 ? -t : t;
}

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

inline float sigmoid(float x) { return 1.0f / (1.0f + fastExp(-x)); }
inline float relu(float x) { return x > 0.0f ? x : 0.0f; }
/// x^e, exact and fast for the square that variance computations use.
inline float power(float x, float e) { return e == 2.0f ? x * x : std::pow(x, e); }

inline float geluErf(float x) { return 0.5f * x * (1.0f + std::erf(x * 0.70710678118654752f)); }

inline float geluTanh(float x) {
  float u = 0.7978845608028654f * (x + 0.044715f * x * x * x);
  return 0.5f * x * (1.0f + fastTanh(u));
}

} // namespace partita::rt::cpu
