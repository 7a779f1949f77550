//===- MockDevice.h - a device whose addresses are not host pointers ------===//
//
// For tests of the executor's device seam. Device type "mock", with its own
// kernels (Add, Mul, Relu and 2-D MatMul in f32, registered from
// MockDevice.cpp the way any backend registers its kernels). Every address
// it hands out, an allocation or an offset into one, is a handle that only
// the device resolves: host pointer arithmetic on one of them yields an
// address the device does not know, and using that address fails the test.
// It counts what the executor asks of it.
//===----------------------------------------------------------------------===//
#pragma once
#include "runtime/core/Device.h"
#include <map>
#include <memory>
#include <mutex>
#include <vector>

namespace partita::test {

inline constexpr rt::DeviceType kMockDevice{"mock"};

class MockDevice final : public rt::Device {
public:
  rt::DeviceType kind() const override { return kMockDevice; }
  std::string name() const override { return "mock"; }
  void *allocate(size_t bytes) override;
  void deallocate(void *p) override;
  void copyFromHost(void *dst, const void *src, size_t bytes) override;
  void copyToHost(void *dst, const void *src, size_t bytes) override;
  void copyOnDevice(void *dst, const void *src, size_t bytes) override;
  void *offset(void *base, size_t bytes) const override;

  /// The host bytes behind `address`, which must have `bytes` left in its
  /// allocation; null, with a test failure, for an address the device never
  /// handed out (or one past its allocation).
  char *host(const void *address, size_t bytes) const;

  size_t liveAllocations() const { return blocks_.size(); }
  size_t bytesFromHost() const { return bytesFromHost_; }
  size_t bytesToHost() const { return bytesToHost_; }

private:
  struct Address {
    size_t block; // allocation id
    size_t offset;
  };
  /// A new handle for (block, offset), or the one made before.
  void *handleFor(size_t block, size_t offset) const;

  mutable std::mutex mutex_;
  std::map<size_t, std::vector<char>> blocks_;       // live allocations by id
  mutable std::map<const void *, Address> addresses_; // every handle handed out
  mutable std::map<std::pair<size_t, size_t>, void *> handles_;
  mutable size_t nextHandle_ = 1;
  size_t nextBlock_ = 1, bytesFromHost_ = 0, bytesToHost_ = 0;
};

} // namespace partita::test
