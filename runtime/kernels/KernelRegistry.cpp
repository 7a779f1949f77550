//===- KernelRegistry.cpp -------------------------------------------------===//
#include "runtime/kernels/KernelRegistry.h"
#include <algorithm>

namespace partita::rt {

llvm::Error kernelError(const Node &node, const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 "node " + node.describe() + ": " + msg);
}

/// Every backend's registration, in the order their registrars ran (a
/// function-local static: registrars in other files may run first).
static std::vector<void (*)(KernelRegistry &)> &backends() {
  static std::vector<void (*)(KernelRegistry &)> list;
  return list;
}

KernelRegistry::Registrar::Registrar(void (*registerKernels)(KernelRegistry &)) {
  backends().push_back(registerKernels);
}

const KernelRegistry &KernelRegistry::get() {
  static const KernelRegistry registry = [] {
    KernelRegistry r;
    for (auto registerKernels : backends())
      registerKernels(r);
    return r;
  }();
  return registry;
}

const KernelRegistry::DeviceKernels *KernelRegistry::findKernels(DeviceType device) const {
  auto it = devices_.find(device.name());
  return it == devices_.end() ? nullptr : &it->second;
}

/// The entry for `key` in `table`, or null.
template <typename T> static const T *lookup(const llvm::StringMap<T> &table, const std::string &key) {
  auto it = table.find(key);
  return it == table.end() ? nullptr : &it->second;
}

void KernelRegistry::add(llvm::StringRef qualifiedOp, DeviceType device, KernelFactory factory) {
  kernelsFor(device).factories[qualifiedOp] = std::move(factory);
}

const KernelFactory *KernelRegistry::find(llvm::StringRef qualifiedOp, DeviceType device) const {
  const DeviceKernels *k = findKernels(device);
  return k ? lookup(k->factories, qualifiedOp.str()) : nullptr;
}

void KernelRegistry::addEpilogue(llvm::StringRef producer, llvm::StringRef consumer, DeviceType device,
                                 EpilogueFactory f) {
  kernelsFor(device).epilogues[(producer + "+" + consumer).str()] = std::move(f);
}

const EpilogueFactory *KernelRegistry::findEpilogue(llvm::StringRef producer, llvm::StringRef consumer,
                                                    DeviceType device) const {
  const DeviceKernels *k = findKernels(device);
  return k ? lookup(k->epilogues, (producer + "+" + consumer).str()) : nullptr;
}

void KernelRegistry::addOperandFusion(llvm::StringRef consumer, llvm::StringRef producer, DeviceType device,
                                      OperandFusionFactory f) {
  kernelsFor(device).operandFusions[(consumer + "<-" + producer).str()] = std::move(f);
}

const OperandFusionFactory *KernelRegistry::findOperandFusion(llvm::StringRef consumer, llvm::StringRef producer,
                                                              DeviceType device) const {
  const DeviceKernels *k = findKernels(device);
  return k ? lookup(k->operandFusions, (consumer + "<-" + producer).str()) : nullptr;
}

const ClusterFusion *KernelRegistry::clusterFusion(DeviceType device) const {
  const DeviceKernels *k = findKernels(device);
  return k && k->clusterFusion.make ? &k->clusterFusion : nullptr;
}

std::vector<std::string> KernelRegistry::ops(DeviceType device) const {
  std::vector<std::string> out;
  if (const DeviceKernels *k = findKernels(device))
    for (const auto &e : k->factories)
      out.push_back(e.getKey().str());
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> KernelRegistry::deviceTypes() const {
  std::vector<std::string> out;
  for (const auto &e : devices_)
    out.push_back(e.getKey().str());
  std::sort(out.begin(), out.end());
  return out;
}

llvm::Expected<const LoopKernels *> KernelRegistry::loopKernels(const Device &device) const {
  const DeviceKernels *k = findKernels(device.kind());
  if (!k || !k->loop.accumulate)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "device " + device.name() + " has no kernels for the training loop's sums");
  return &k->loop;
}

} // namespace partita::rt
