//===- StrictCpuDevice.cpp - CPU memory the host cannot touch -------------===//
//
// Each allocation gets two ranges of the same size: the bytes (host memory,
// what kernels and copies use) and a range mapped PROT_NONE whose address is
// handed out as the device address. Nothing is ever mapped there, so host
// code dereferencing a device address faults at its first byte; offsets into
// an allocation (the executor's arena) stay within its range and translate
// by the distance from its start.
//===----------------------------------------------------------------------===//
#include "runtime/core/Device.h"
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <sys/mman.h>
#include <unistd.h>

namespace partita::rt {

struct StrictCpuDevice::Allocations {
  struct Block {
    size_t bytes;  // the handle range's size
    void *backing; // the host memory holding the bytes
  };
  mutable std::mutex mu;
  std::map<uintptr_t, Block> byAddress; // handle range start -> block
};

namespace {
[[noreturn]] void notDeviceMemory(const void *p) {
  std::fprintf(stderr, "cpu-strict: %p is not memory of this device (host memory handed to a kernel or a copy)\n", p);
  std::abort();
}
} // namespace

StrictCpuDevice::StrictCpuDevice() : allocations_(std::make_unique<Allocations>()) {}

StrictCpuDevice::~StrictCpuDevice() {
  for (auto &[at, block] : allocations_->byAddress) {
    ::munmap(reinterpret_cast<void *>(at), block.bytes);
    std::free(block.backing);
  }
}

void *StrictCpuDevice::allocate(size_t bytes) {
  static const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  size_t rounded = (std::max<size_t>(bytes, 1) + page - 1) / page * page;
  void *handle = ::mmap(nullptr, rounded, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (handle == MAP_FAILED)
    return nullptr;
  void *backing = CpuDevice::allocate(rounded);
  if (!backing) {
    ::munmap(handle, rounded);
    return nullptr;
  }
  std::lock_guard<std::mutex> lock(allocations_->mu);
  allocations_->byAddress[reinterpret_cast<uintptr_t>(handle)] = {rounded, backing};
  return handle;
}

void StrictCpuDevice::deallocate(void *p) {
  if (!p)
    return;
  std::lock_guard<std::mutex> lock(allocations_->mu);
  auto it = allocations_->byAddress.find(reinterpret_cast<uintptr_t>(p));
  if (it == allocations_->byAddress.end())
    notDeviceMemory(p);
  ::munmap(p, it->second.bytes);
  std::free(it->second.backing);
  allocations_->byAddress.erase(it);
}

void *StrictCpuDevice::kernelAddress(void *deviceAddress) const {
  if (!deviceAddress)
    return nullptr;
  auto at = reinterpret_cast<uintptr_t>(deviceAddress);
  std::lock_guard<std::mutex> lock(allocations_->mu);
  auto it = allocations_->byAddress.upper_bound(at);
  if (it == allocations_->byAddress.begin())
    notDeviceMemory(deviceAddress);
  --it;
  size_t into = at - it->first;
  if (into > it->second.bytes) // one past the end is an address, not a byte
    notDeviceMemory(deviceAddress);
  return static_cast<char *>(it->second.backing) + into;
}

void StrictCpuDevice::copyFromHost(void *dst, const void *src, size_t bytes) {
  if (bytes)
    std::memcpy(kernelAddress(dst), src, bytes);
}
void StrictCpuDevice::copyToHost(void *dst, const void *src, size_t bytes) {
  if (bytes)
    std::memcpy(dst, kernelAddress(src), bytes);
}
void StrictCpuDevice::copyOnDevice(void *dst, const void *src, size_t bytes) {
  if (bytes)
    std::memmove(kernelAddress(dst), kernelAddress(src), bytes);
}

} // namespace partita::rt
