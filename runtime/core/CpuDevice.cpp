//===- CpuDevice.cpp ------------------------------------------------------===//
#include "runtime/core/Device.h"
#include <cstdlib>
#if defined(__SSE__)
#include <xmmintrin.h>
#endif
#include <cstring>

namespace partita::rt {

CpuDevice::CpuDevice() {
#if defined(__SSE__)
  auto ftz = [] { _mm_setcsr(_mm_getcsr() | 0x8040); }; // FTZ | DAZ
  ftz();
#pragma omp parallel
  ftz();
#endif
}

void *CpuDevice::allocate(size_t bytes) {
  size_t rounded = (bytes + alignment() - 1) / alignment() * alignment();
  return std::aligned_alloc(alignment(), rounded ? rounded : alignment());
}

void CpuDevice::deallocate(void *p) { std::free(p); }

void CpuDevice::copyFromHost(void *dst, const void *src, size_t bytes) { std::memcpy(dst, src, bytes); }
void CpuDevice::copyToHost(void *dst, const void *src, size_t bytes) { std::memcpy(dst, src, bytes); }
void CpuDevice::copyOnDevice(void *dst, const void *src, size_t bytes) { std::memmove(dst, src, bytes); }
void CpuDevice::fill(void *dst, uint8_t value, size_t bytes) { std::memset(dst, value, bytes); }

} // namespace partita::rt
