//===- KernelRegistry.h - (domain, op, device) -> kernel factory ----------===//
#pragma once
#include "runtime/kernels/Kernel.h"
#include "llvm/ADT/StringMap.h"

namespace partita::rt {

class KernelRegistry {
public:
  /// The registry with every built-in device's kernels.
  static const KernelRegistry &get();

  /// `qualifiedOp` is "Op" for ai.onnx, "domain.Op" otherwise.
  void add(llvm::StringRef qualifiedOp, DeviceKind device, KernelFactory factory);
  const KernelFactory *find(llvm::StringRef qualifiedOp, DeviceKind device) const;
  std::vector<std::string> ops(DeviceKind device) const;

  /// Fused producer+consumer kernels, keyed "Producer+Consumer".
  void addEpilogue(llvm::StringRef producer, llvm::StringRef consumer, DeviceKind device, EpilogueFactory f);
  const EpilogueFactory *findEpilogue(llvm::StringRef producer, llvm::StringRef consumer, DeviceKind device) const;

  /// Consumers that can read a producer's operand in place, keyed
  /// "Consumer<-Producer" (the factory also handles every epilogue the
  /// consumer has).
  void addOperandFusion(llvm::StringRef consumer, llvm::StringRef producer, DeviceKind device,
                        OperandFusionFactory f);
  const OperandFusionFactory *findOperandFusion(llvm::StringRef consumer, llvm::StringRef producer,
                                                DeviceKind device) const;

  void setClusterFusion(DeviceKind device, ClusterFusion f) { clusterFusion_[static_cast<int>(device)] = std::move(f); }
  /// Null when the device fuses no elementwise clusters.
  const ClusterFusion *clusterFusion(DeviceKind device) const {
    const ClusterFusion &f = clusterFusion_[static_cast<int>(device)];
    return f.make ? &f : nullptr;
  }

private:
  ClusterFusion clusterFusion_[2];
  llvm::StringMap<KernelFactory> factories_[2];
  llvm::StringMap<EpilogueFactory> epilogues_[2];
  llvm::StringMap<OperandFusionFactory> operandFusions_[2];
};

/// Registration entry of each device's kernel set.
void registerCpuKernels(KernelRegistry &r);

} // namespace partita::rt
