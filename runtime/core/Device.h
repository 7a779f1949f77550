//===- Device.h - where tensors live and kernels run -----------------------===//
//
// The executor only allocates, frees and copies through this interface; CPU
// and (later) CUDA devices implement it. Nothing outside a device's own kernels
// assumes host-addressable memory.
//
//===----------------------------------------------------------------------===//
#pragma once
#include <cstddef>
#include <string>

namespace partita::rt {

enum class DeviceKind { CPU, CUDA };

const char *deviceKindName(DeviceKind k);

class Device {
public:
  virtual ~Device() = default;
  virtual DeviceKind kind() const = 0;
  virtual std::string name() const = 0;
  /// Memory aligned to `alignment()`; nullptr when out of memory.
  virtual void *allocate(size_t bytes) = 0;
  virtual void deallocate(void *p) = 0;
  virtual void copyFromHost(void *dst, const void *src, size_t bytes) = 0;
  virtual void copyToHost(void *dst, const void *src, size_t bytes) = 0;
  virtual void copyOnDevice(void *dst, const void *src, size_t bytes) = 0;
  /// Waits for queued work (a no-op on the CPU).
  virtual void synchronize() {}
  static constexpr size_t alignment() { return 64; }
};

/// The host CPU; kernels run on the calling thread plus an OpenMP team.
class CpuDevice final : public Device {
public:
  /// Sets flush-to-zero / denormals-are-zero on this thread and the OpenMP
  /// team: float denormals (e.g. softmax probabilities of very unlikely
  /// tokens in a backward pass) otherwise slow GEMMs down a hundredfold.
  CpuDevice();
  DeviceKind kind() const override { return DeviceKind::CPU; }
  std::string name() const override { return "cpu"; }
  void *allocate(size_t bytes) override;
  void deallocate(void *p) override;
  void copyFromHost(void *dst, const void *src, size_t bytes) override;
  void copyToHost(void *dst, const void *src, size_t bytes) override;
  void copyOnDevice(void *dst, const void *src, size_t bytes) override;
};

} // namespace partita::rt
