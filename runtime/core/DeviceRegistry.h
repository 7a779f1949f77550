//===- DeviceRegistry.h - devices by name ---------------------------------===//
//
// As kernels are registered per device type (runtime/kernels/KernelRegistry.h),
// devices are registered by the name a user gives (`--device NAME` of run,
// launch and inspect): `cpu` always; `cuda` in a build with CUDA. An entry
// says what kind of device it makes (the kernels it runs and inspect's sizes)
// and makes one; an unknown name is an error listing the names this build has.
//===----------------------------------------------------------------------===//
#pragma once
#include "runtime/core/Device.h"
#include "llvm/Support/Error.h"
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace partita::rt {

/// The device a tool uses when none is named.
inline constexpr const char *kDefaultDevice = "cpu";

class DeviceRegistry {
public:
  using Factory = std::function<llvm::Expected<std::unique_ptr<Device>>()>;
  struct Entry {
    std::string name, summary;
    DeviceType kind;
    Factory create;
  };

  /// The registry, with the CPU device in it.
  static DeviceRegistry &get();
  /// Registers `entry`; a second entry of one name replaces the first.
  void add(Entry entry);
  /// The entry named `name`, or an error naming it and the registered ones.
  llvm::Expected<const Entry *> find(llvm::StringRef name) const;
  /// A new device named `name` (find's errors, or the device's own).
  llvm::Expected<std::unique_ptr<Device>> create(llvm::StringRef name) const;
  /// Every entry, by name.
  const std::vector<Entry> &entries() const { return entries_; }

private:
  std::vector<Entry> entries_;
};

} // namespace partita::rt
