//===- LoopKernels.cpp - the training loop's kernels on the CPU -----------===//
#include "runtime/kernels/LoopKernels.h"
#include "runtime/core/HalfConvert.h"
#include "runtime/cpu/CpuKernels.h"
#include <algorithm>
#include <cstring>

namespace partita::rt::cpu {
namespace {

constexpr int64_t kRow = 4096; // float32 staging per chunk of a half row

void accumulateOn(Device &device, void *sumAt, const void *gAt, DType gType, int64_t n, bool first) {
  auto *sum = static_cast<float *>(device.kernelAddress(sumAt));
  const void *g = device.kernelAddress(gAt);
  if (gType == DType::F32) {
    const auto *x = static_cast<const float *>(g);
    if (first) {
      std::memcpy(sum, x, static_cast<size_t>(n) * sizeof(float));
      return;
    }
#pragma omp parallel for if (n > (1 << 16))
    for (int64_t k = 0; k < n; ++k)
      sum[k] += x[k];
    return;
  }
  const auto *h = static_cast<const uint16_t *>(g);
#pragma omp parallel for if (n > (1 << 16))
  for (int64_t b = 0; b < n; b += kRow) {
    int64_t e = std::min(n, b + kRow);
    float wide[kRow];
    widenHalfRow(gType, h + b, wide, 0, e - b);
    for (int64_t k = b; k < e; ++k)
      sum[k] = first ? wide[k - b] : sum[k] + wide[k - b];
  }
}

void roundOn(Device &device, void *hAt, const void *sumAt, DType hType, int64_t n) {
  const auto *sum = static_cast<const float *>(device.kernelAddress(sumAt));
  auto *h = static_cast<uint16_t *>(device.kernelAddress(hAt));
#pragma omp parallel for if (n > (1 << 16))
  for (int64_t b = 0; b < n; b += kRow)
    roundToHalfRow(hType, sum, h, b, std::min(n, b + kRow));
}

void addOn(Device &device, const void *xAt, void *yAt, DType type, int64_t n) {
  const void *x = device.kernelAddress(xAt);
  void *y = device.kernelAddress(yAt);
  if (type != DType::F32) {
    combineHalfRows(type, static_cast<const uint16_t *>(x), static_cast<uint16_t *>(y), n);
    return;
  }
  const auto *a = static_cast<const float *>(x);
  auto *b = static_cast<float *>(y);
#pragma omp parallel for if (n > (1 << 16))
  for (int64_t k = 0; k < n; ++k)
    b[k] += a[k];
}

// Each runs on the device's stream, after the programs' kernels launched before it.
template <typename F> void launched(Device &device, F body) {
  llvm::consumeError(device.launch([body]() {
    body();
    return llvm::Error::success();
  }));
}

void accumulate(Device &device, void *sum, const void *g, DType gType, int64_t n, bool first) {
  launched(device, [&device, sum, g, gType, n, first] { accumulateOn(device, sum, g, gType, n, first); });
}
void round(Device &device, void *h, const void *sum, DType hType, int64_t n) {
  launched(device, [&device, h, sum, hType, n] { roundOn(device, h, sum, hType, n); });
}
void add(Device &device, const void *x, void *y, DType type, int64_t n) {
  launched(device, [&device, x, y, type, n] { addOn(device, x, y, type, n); });
}

} // namespace

void registerLoopKernels(KernelRegistry &r) { r.setLoopKernels(kCpuDevice, LoopKernels{accumulate, round, add}); }

} // namespace partita::rt::cpu
