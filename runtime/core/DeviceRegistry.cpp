//===- DeviceRegistry.cpp -------------------------------------------------===//
#include "runtime/core/DeviceRegistry.h"
#include <algorithm>

namespace partita::rt {

DeviceRegistry &DeviceRegistry::get() {
  static DeviceRegistry registry = [] {
    DeviceRegistry r;
    r.add({kDefaultDevice, "the host's memory and cores (oneDNN, OpenMP)", kCpuDevice,
           []() -> llvm::Expected<std::unique_ptr<Device>> { return std::make_unique<CpuDevice>(); }});
    r.add({"cpu-strict", "the cpu device, its memory out of the host's reach (for tests: host code that reads it faults)",
           kCpuDevice, []() -> llvm::Expected<std::unique_ptr<Device>> { return std::make_unique<StrictCpuDevice>(); }});
    return r;
  }();
  return registry;
}

void DeviceRegistry::add(Entry entry) {
  auto it = std::find_if(entries_.begin(), entries_.end(), [&](const Entry &e) { return e.name == entry.name; });
  if (it != entries_.end())
    *it = std::move(entry);
  else
    entries_.push_back(std::move(entry));
  std::sort(entries_.begin(), entries_.end(), [](const Entry &a, const Entry &b) { return a.name < b.name; });
}

llvm::Expected<const DeviceRegistry::Entry *> DeviceRegistry::find(llvm::StringRef name) const {
  for (const Entry &e : entries_)
    if (e.name == name)
      return &e;
  std::string known;
  for (const Entry &e : entries_)
    known += (known.empty() ? "" : ", ") + e.name;
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 "--device " + name + ": no such device in this build (it has: " + known + ")");
}

llvm::Expected<std::unique_ptr<Device>> DeviceRegistry::create(llvm::StringRef name) const {
  auto entry = find(name);
  if (!entry)
    return entry.takeError();
  return (*entry)->create();
}

} // namespace partita::rt
