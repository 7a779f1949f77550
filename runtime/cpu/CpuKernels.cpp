//===- CpuKernels.cpp - registers every CPU kernel ------------------------===//
#include "runtime/cpu/CpuKernels.h"
#include "runtime/comm/Communicator.h"

namespace partita::rt {

static void registerCpuKernels(KernelRegistry &r) {
  // Fallbacks first: the specialised families below replace them op by op.
  cpu::registerFallbackKernels(r);
  cpu::registerGemmKernels(r);
  cpu::registerElementwiseKernels(r);
  cpu::registerNormKernels(r);
  cpu::registerMovementKernels(r);
  cpu::registerCollectiveKernels(r);
  cpu::registerP2PKernels(r);
  cpu::registerReduceKernels(r);
  cpu::registerOptimizerKernels(r);
  cpu::registerFlatShardsKernels(r);
  cpu::registerSumCopiesKernel(r);
  cpu::registerShardSliceKernel(r);
  cpu::registerFusedElementwiseKernel(r);
  cpu::registerLoopKernels(r);
}

// Nothing calls into this file: runtime/CMakeLists.txt has every binary that
// links the runtime keep it by this (unmangled) name.
extern "C" {
KernelRegistry::Registrar partita_cpu_kernels(registerCpuKernels);
}

namespace cpu {
bool allOfType(const Node &node, DType t) {
  for (const Value *v : node.inputs())
    if (v && v->type().dtype != t)
      return false;
  for (const Value *v : node.outputs())
    if (v->type().dtype != t)
      return false;
  return true;
}

llvm::Expected<Communicator *> axisGroup(const Node &node, const KernelContext &ctx, const std::string &axis,
                                         int64_t parts) {
  Communicator *group = ctx.env ? ctx.env->group(axis) : nullptr;
  if (!group)
    return kernelError(node, "no communicator for mesh axis '" + axis + "'");
  if (group->size() != parts)
    return kernelError(node, "group '" + axis + "' has " + llvm::Twine(group->size()) +
                                 " ranks, the program was compiled for " + llvm::Twine(parts));
  return group;
}
} // namespace cpu

} // namespace partita::rt
