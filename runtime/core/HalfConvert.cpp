//===- HalfConvert.cpp ----------------------------------------------------===//
#include "runtime/core/HalfConvert.h"
#include "compiler/ir/Tensor.h"
#include <algorithm>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace partita::rt {

namespace {
#if defined(__x86_64__)
__attribute__((target("avx,f16c"))) void toHalfF16c(const float *x, uint16_t *y, int64_t b, int64_t e) {
  int64_t i = b;
  for (; i + 8 <= e; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i *>(y + i), _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT));
  for (; i < e; ++i)
    y[i] = floatToHalf(x[i]);
}
__attribute__((target("avx,f16c"))) void fromHalfF16c(const uint16_t *x, float *y, int64_t b, int64_t e) {
  int64_t i = b;
  for (; i + 8 <= e; i += 8)
    _mm256_storeu_ps(y + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i *>(x + i))));
  for (; i < e; ++i)
    y[i] = halfToFloat(x[i]);
}
bool hasF16c() {
  static const bool yes = __builtin_cpu_supports("avx") && __builtin_cpu_supports("f16c");
  return yes;
}
#else
void toHalfF16c(const float *, uint16_t *, int64_t, int64_t) {}
void fromHalfF16c(const uint16_t *, float *, int64_t, int64_t) {}
bool hasF16c() { return false; }
#endif
} // namespace

void roundToHalfRow(DType half, const float *x, uint16_t *y, int64_t b, int64_t e) {
  if (half == DType::F16) {
    if (hasF16c())
      return toHalfF16c(x, y, b, e);
    for (int64_t i = b; i < e; ++i)
      y[i] = floatToHalf(x[i]);
    return;
  }
  for (int64_t i = b; i < e; ++i)
    y[i] = floatToBf16(x[i]);
}

void widenHalfRow(DType half, const uint16_t *x, float *y, int64_t b, int64_t e) {
  if (half == DType::F16) {
    if (hasF16c())
      return fromHalfF16c(x, y, b, e);
    for (int64_t i = b; i < e; ++i)
      y[i] = halfToFloat(x[i]);
    return;
  }
  for (int64_t i = b; i < e; ++i)
    y[i] = bf16ToFloat(x[i]);
}

void combineHalfRows(DType half, const uint16_t *x, uint16_t *y, int64_t n, bool max) {
  constexpr int64_t kChunk = 256; // widened in chunks: F16C's vector conversions for fp16
  float a[kChunk], b[kChunk];
  for (int64_t i = 0; i < n; i += kChunk) {
    int64_t len = std::min(kChunk, n - i);
    widenHalfRow(half, x + i, a, 0, len);
    widenHalfRow(half, y + i, b, 0, len);
    for (int64_t k = 0; k < len; ++k)
      b[k] = max ? std::max(a[k], b[k]) : a[k] + b[k];
    roundToHalfRow(half, b, y + i, 0, len);
  }
}

} // namespace partita::rt
