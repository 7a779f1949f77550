//===- FallbackKernel.cpp - reference kernels from the compiler's evaluator --===//
//
// Every op the compiler can fold also runs here through the same evaluator
// (double-precision arithmetic, rounded once to the output type). It serves
// shape computations that were not folded, rare dtypes, and is the baseline
// the specialised kernels are tested against.
//===----------------------------------------------------------------------===//
#include "compiler/ops/OpRegistry.h"
#include "runtime/cpu/CpuKernels.h"
#include <cstring>

namespace partita::rt::cpu {

namespace {
class FallbackKernel final : public Kernel {
public:
  explicit FallbackKernel(const Node &node) : node_(node) {}

  llvm::Error run(KernelContext &ctx) override {
    std::vector<Tensor> ins;
    for (const TensorView &v : ctx.inputs) {
      if (!v.data && v.numel() != 0)
        continue; // omitted optional input
      auto bytes = std::make_shared<std::vector<uint8_t>>(v.bytes());
      std::memcpy(bytes->data(), v.data, v.bytes());
      ins.emplace_back(v.dtype, v.shape, std::move(bytes));
    }
    auto outs = evaluateNode(node_, ins);
    if (!outs)
      return outs.takeError();
    for (size_t i = 0; i < ctx.outputs.size() && i < outs->size(); ++i) {
      const Tensor &t = (*outs)[i];
      if (t.shape() != ctx.outputs[i].shape || t.dtype() != ctx.outputs[i].dtype)
        return kernelError(node_, "result " + t.type().str() + " differs from the planned " +
                                      dtypeName(ctx.outputs[i].dtype) + shapeString(ctx.outputs[i].shape));
      std::memcpy(ctx.outputs[i].data, t.data(), t.byteSize());
    }
    return llvm::Error::success();
  }

private:
  const Node &node_;
};
} // namespace

llvm::Expected<std::unique_ptr<Kernel>> makeFallbackKernel(const Node &node) {
  const OpInfo *info = OpRegistry::get().find(node.qualifiedOp());
  if (!info || !info->eval)
    return kernelError(node, "no CPU kernel for this operator with these types");
  return std::make_unique<FallbackKernel>(node);
}

void registerFallbackKernels(KernelRegistry &r) {
  for (const std::string &op : OpRegistry::get().names()) {
    const OpInfo *info = OpRegistry::get().find(op);
    if (info->eval && op != "Constant" && op != "Weight")
      r.add(op, kCpuDevice, makeFallbackKernel);
  }
}

} // namespace partita::rt::cpu
