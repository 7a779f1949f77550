//===- KernelRegistry.cpp -------------------------------------------------===//
#include "runtime/kernels/KernelRegistry.h"
#include <algorithm>

namespace partita::rt {

llvm::Error kernelError(const Node &node, const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 "node " + node.describe() + ": " + msg);
}

const KernelRegistry &KernelRegistry::get() {
  static const KernelRegistry registry = [] {
    KernelRegistry r;
    registerCpuKernels(r);
    return r;
  }();
  return registry;
}

void KernelRegistry::add(llvm::StringRef qualifiedOp, DeviceKind device, KernelFactory factory) {
  factories_[static_cast<int>(device)][qualifiedOp] = std::move(factory);
}

/// The entry for `key` in a device's table, or null.
template <typename T>
static const T *lookup(const llvm::StringMap<T> (&tables)[2], DeviceKind device, const std::string &key) {
  const auto &table = tables[static_cast<int>(device)];
  auto it = table.find(key);
  return it == table.end() ? nullptr : &it->second;
}

const KernelFactory *KernelRegistry::find(llvm::StringRef qualifiedOp, DeviceKind device) const {
  return lookup(factories_, device, qualifiedOp.str());
}

void KernelRegistry::addEpilogue(llvm::StringRef producer, llvm::StringRef consumer, DeviceKind device,
                                 EpilogueFactory f) {
  epilogues_[static_cast<int>(device)][(producer + "+" + consumer).str()] = std::move(f);
}

const EpilogueFactory *KernelRegistry::findEpilogue(llvm::StringRef producer, llvm::StringRef consumer,
                                                    DeviceKind device) const {
  return lookup(epilogues_, device, (producer + "+" + consumer).str());
}

void KernelRegistry::addOperandFusion(llvm::StringRef consumer, llvm::StringRef producer, DeviceKind device,
                                      OperandFusionFactory f) {
  operandFusions_[static_cast<int>(device)][(consumer + "<-" + producer).str()] = std::move(f);
}

const OperandFusionFactory *KernelRegistry::findOperandFusion(llvm::StringRef consumer, llvm::StringRef producer,
                                                              DeviceKind device) const {
  return lookup(operandFusions_, device, (consumer + "<-" + producer).str());
}

std::vector<std::string> KernelRegistry::ops(DeviceKind device) const {
  std::vector<std::string> out;
  for (const auto &e : factories_[static_cast<int>(device)])
    out.push_back(e.getKey().str());
  std::sort(out.begin(), out.end());
  return out;
}

} // namespace partita::rt
