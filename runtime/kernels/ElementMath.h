//===- ElementMath.h - per-element math every device's kernels share -------===//
//
// The arithmetic of the elementwise ops and of AdamW, once: the CPU kernels
// (runtime/cpu) call these in their loops and the CUDA kernels (runtime/cuda)
// in theirs, so a device changes where the math runs, not what it is.
// PARTITA_HD (compiler/ir/FloatBits.h) compiles each for host and GPU.
//
// exp and tanh are branch-free (Cephes-style range reduction + polynomial,
// ~2 ulp): libm's expf/tanhf are scalar calls that block vectorization on the
// CPU. Without -ffast-math GCC does not vectorize fminf/fmaxf/nearbyintf/
// copysignf, hence the ternaries and the round-to-nearest-even by adding and
// removing 1.5 * 2^23 (NaN stays NaN).
//===----------------------------------------------------------------------===//
#pragma once
#include "compiler/ir/FloatBits.h"
#include <math.h>

namespace partita::rt {

PARTITA_HD inline float fastExp(float x) {
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
  float halfScale = bitsFloat((floatBits(t) + (126u - 0x4B400000u)) << 23);
  return (p * 2.0f) * halfScale;
}

/// Absolute error ~1e-7; relative error grows near 0, where 1 - e cancels (the
/// callers add tanh to 1).
PARTITA_HD inline float fastTanh(float x) {
  float e = fastExp(x < 0 ? 2.0f * x : -2.0f * x); // exp(-2|x|) in [0, 1]: no overflow
  float t = (1.0f - e) / (1.0f + e);
  return x < 0 ? -t : t;
}

PARTITA_HD inline float sigmoid(float x) { return 1.0f / (1.0f + fastExp(-x)); }
PARTITA_HD inline float relu(float x) { return x > 0.0f ? x : 0.0f; }
/// x^e, exact and fast for the square that variance computations use.
PARTITA_HD inline float power(float x, float e) { return e == 2.0f ? x * x : powf(x, e); }

PARTITA_HD inline float geluErf(float x) { return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f)); }

PARTITA_HD inline float geluTanh(float x) {
  float u = 0.7978845608028654f * (x + 0.044715f * x * x * x);
  return 0.5f * x * (1.0f + fastTanh(u));
}

/// The elementwise ops every device runs on float32, as X(ONNX name,
/// identifier, expression in x (unary) or a and b (binary)): a backend expands
/// the list into its kernels (a lambda per op on the CPU, a functor per op on
/// the GPU), so an op's math is written here only. Max and Min are
/// std::max/std::min's comparisons (a NaN first operand is returned).
#define PARTITA_UNARY_OPS(X)                                                                                        \
  X("Neg", Neg, -x)                                                                                                 \
  X("Abs", Abs, fabsf(x))                                                                                           \
  X("Sqrt", Sqrt, sqrtf(x))                                                                                         \
  X("Reciprocal", Reciprocal, 1.0f / x)                                                                             \
  X("Exp", Exp, ::partita::rt::fastExp(x))                                                                          \
  X("Log", Log, logf(x))                                                                                            \
  X("Erf", Erf, erff(x))                                                                                            \
  X("Tanh", Tanh, ::partita::rt::fastTanh(x))                                                                       \
  X("Sin", Sin, sinf(x))                                                                                            \
  X("Cos", Cos, cosf(x))                                                                                            \
  X("Floor", Floor, floorf(x))                                                                                      \
  X("Ceil", Ceil, ceilf(x))                                                                                         \
  X("Sigmoid", Sigmoid, ::partita::rt::sigmoid(x))                                                                  \
  X("Relu", Relu, ::partita::rt::relu(x))                                                                           \
  X("partita.Gelu", Gelu, ::partita::rt::geluErf(x))                                                                \
  X("partita.FastGelu", FastGelu, ::partita::rt::geluTanh(x))
#define PARTITA_BINARY_OPS(X)                                                                                       \
  X("Add", Add, a + b)                                                                                              \
  X("Sub", Sub, a - b)                                                                                              \
  X("Mul", Mul, a * b)                                                                                              \
  X("Div", Div, a / b)                                                                                              \
  X("Max", Max, (a < b ? b : a))                                                                                    \
  X("Min", Min, (b < a ? b : a))                                                                                    \
  X("Pow", Pow, ::partita::rt::power(a, b))

/// One AdamW step's constants (torch.optim.AdamW, decoupled weight decay):
/// from the learning rate, the bias corrections 1 - beta^t and the gradient's
/// scale (1 / the fp16 loss scale, or 1), all read from device memory by the
/// kernels, and the node's betas, epsilon and decay.
struct AdamWStep {
  float decay, step, invRootBc2, b1, b2, eps, gradScale;
};

PARTITA_HD inline AdamWStep adamwStep(float lr, float bc1, float bc2, float b1, float b2, float eps,
                                      float weightDecay, float gradScale) {
  return {1.0f - lr * weightDecay, lr / bc1, 1.0f / sqrtf(bc2), b1, b2, eps, gradScale};
}

/// Element i of the update: m and v move in place, the parameter's new value
/// is returned: p (1 - lr wd) - lr/bc1 m / (sqrt(v / bc2) + eps).
PARTITA_HD inline float adamwUpdate(const AdamWStep &s, float p, float g, float &m, float &v) {
  float gi = s.gradScale * g;
  m = s.b1 * m + (1.0f - s.b1) * gi;
  v = s.b2 * v + (1.0f - s.b2) * gi * gi;
  return p * s.decay - s.step * m / (sqrtf(v) * s.invRootBc2 + s.eps);
}

} // namespace partita::rt
