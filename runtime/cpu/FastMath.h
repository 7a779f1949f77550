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
  // Over ln(FLT_MAX) ~ 88.72 the result overflows to inf; under ~-87 (results
  // near FLT_MIN) it is flushed to 0. NaN passes the clamp and stays NaN.
  x = x < -87.5f ? -87.5f : (x > 89.0f ? 89.0f : x);
  constexpr float kRound = 12582912.0f;                 // 1.5 * 2^23
  float t = x * 1.44269504088896341f + kRound;          // n + 1.5 * 2^23: n in its low bits
  float n = t - kRound;                                 // nearest integer to x / ln 2
  float r = x - n * 0.693359375f + n * 2.12194440e-4f;  // x - n ln 2, in two parts
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  // 2^(n-1) from t's bits in unsigned arithmetic (no float-to-int conversion,
  // undefined for NaN): n in [-126, 128] gives exponent fields 0 (a zero) to
  // 254, so 2^128 * p stays reachable. A NaN t yields some bits; p is NaN.
  uint32_t tbits;
  std::memcpy(&tbits, &t, 4);
  uint32_t bits = (tbits + (126u - 0x4B400000u)) << 23;
  float halfScale;
  std::memcpy(&halfScale, &bits, 4);
  return (p * 2.0f) * halfScale;
}

/// Absolute error ~1e-7; relative error grows near 0, where 1 - e cancels (the
/// callers add tanh to 1).
inline float fastTanh(float x) {
  float e = fastExp(x < 0 ? 2.0f * x : -2.0f * x); // exp(-2|x|) in [0, 1]: no overflow
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
