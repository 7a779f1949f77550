//===- KernelRegistry.h - (domain, op, device) -> kernel factory ----------===//
//
// Open to new devices: each backend adds its kernels under its DeviceType
// from a static Registrar in its own files (runtime/cpu/CpuKernels.cpp for
// the CPU); this registry names no device. Registrars run before main and
// the registry is built from them on its first use.
//===----------------------------------------------------------------------===//
#pragma once
#include "runtime/kernels/Kernel.h"
#include "runtime/kernels/LoopKernels.h"
#include "llvm/ADT/StringMap.h"

namespace partita::rt {

class KernelRegistry {
public:
  /// The registry with every linked backend's kernels.
  static const KernelRegistry &get();

  /// Adds a backend's kernel set to the registry get() builds. Define one
  /// per backend at namespace scope:
  ///   KernelRegistry::Registrar cudaKernels(registerCudaKernels);
  /// In a static library nothing refers to it: keep it in the link by its
  /// symbol, as runtime/CMakeLists.txt does for the CPU's.
  struct Registrar {
    explicit Registrar(void (*registerKernels)(KernelRegistry &));
  };

  /// `qualifiedOp` is "Op" for ai.onnx, "domain.Op" otherwise.
  void add(llvm::StringRef qualifiedOp, DeviceType device, KernelFactory factory);
  const KernelFactory *find(llvm::StringRef qualifiedOp, DeviceType device) const;
  std::vector<std::string> ops(DeviceType device) const;
  /// The names of the device types that have kernels, sorted.
  std::vector<std::string> deviceTypes() const;

  /// Fused producer+consumer kernels, keyed "Producer+Consumer".
  void addEpilogue(llvm::StringRef producer, llvm::StringRef consumer, DeviceType device, EpilogueFactory f);
  const EpilogueFactory *findEpilogue(llvm::StringRef producer, llvm::StringRef consumer, DeviceType device) const;

  /// Consumers that can read a producer's operand in place, keyed
  /// "Consumer<-Producer" (the factory also handles every epilogue the
  /// consumer has).
  void addOperandFusion(llvm::StringRef consumer, llvm::StringRef producer, DeviceType device,
                        OperandFusionFactory f);
  const OperandFusionFactory *findOperandFusion(llvm::StringRef consumer, llvm::StringRef producer,
                                                DeviceType device) const;

  void setClusterFusion(DeviceType device, ClusterFusion f) { kernelsFor(device).clusterFusion = std::move(f); }
  /// Null when the device fuses no elementwise clusters.
  const ClusterFusion *clusterFusion(DeviceType device) const;
  /// The training loop's kernels on `device` (LoopKernels.h).
  void setLoopKernels(DeviceType device, LoopKernels k) { kernelsFor(device).loop = k; }
  /// Those of `device`'s type, or an error naming the device.
  llvm::Expected<const LoopKernels *> loopKernels(const Device &device) const;

private:
  /// One device type's kernels.
  struct DeviceKernels {
    ClusterFusion clusterFusion;
    LoopKernels loop{};
    llvm::StringMap<KernelFactory> factories;
    llvm::StringMap<EpilogueFactory> epilogues;
    llvm::StringMap<OperandFusionFactory> operandFusions;
  };
  DeviceKernels &kernelsFor(DeviceType device) { return devices_[device.name()]; }
  /// Null for a device type without kernels.
  const DeviceKernels *findKernels(DeviceType device) const;
  llvm::StringMap<DeviceKernels> devices_;
};

} // namespace partita::rt
