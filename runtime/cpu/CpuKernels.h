//===- CpuKernels.h - the CPU kernel families -----------------------------===//
#pragma once
#include "runtime/kernels/KernelRegistry.h"

namespace partita::rt {
class Communicator;
}

namespace partita::rt::cpu {

void registerFallbackKernels(KernelRegistry &r);
void registerGemmKernels(KernelRegistry &r);
void registerFusedElementwiseKernel(KernelRegistry &r);
void registerLoopKernels(KernelRegistry &r);
void registerElementwiseKernels(KernelRegistry &r);
void registerNormKernels(KernelRegistry &r);
void registerMovementKernels(KernelRegistry &r);
void registerCollectiveKernels(KernelRegistry &r);
void registerP2PKernels(KernelRegistry &r);
void registerReduceKernels(KernelRegistry &r);
void registerOptimizerKernels(KernelRegistry &r);
void registerFlatShardsKernels(KernelRegistry &r);
void registerSumCopiesKernel(KernelRegistry &r);
void registerShardSliceKernel(KernelRegistry &r);

/// The reference kernel for `node` (compile-time evaluator on host tensors,
/// computing in double): correct for every dtype, slow. Fast kernels hand
/// over to it for dtypes they do not specialise.
llvm::Expected<std::unique_ptr<Kernel>> makeFallbackKernel(const Node &node);

/// True when every input and output of `node` has element type `t`.
bool allOfType(const Node &node, DType t);

/// The communicator of mesh axis `axis` for `node`'s kernel, checked to
/// have the `parts` ranks the program was compiled for.
llvm::Expected<Communicator *> axisGroup(const Node &node, const KernelContext &ctx, const std::string &axis,
                                         int64_t parts);

} // namespace partita::rt::cpu
