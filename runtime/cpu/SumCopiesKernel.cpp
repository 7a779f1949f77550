//===- SumCopiesKernel.cpp - partita.SumCopies ----------------------------===//
//
// The gradient of a weight whose blocks are copies (replicate-kv-heads: one
// kv head's projection per tensor-parallel rank that reads it) is the sum of
// the copies' gradients, in every copy. The weight is split over tp (each rank
// one block, or a ZeRO shard of it; annotate-megatron refuses it held whole),
// so the kernel all-reduces over the `copies` consecutive ranks holding the
// run, a group split once per rank from the axis's (RuntimeEnv::subgroups).
//===----------------------------------------------------------------------===//
#include "compiler/plan/Names.h"
#include "runtime/comm/Communicator.h"
#include "runtime/cpu/CpuKernels.h"
#include <cstring>

namespace partita::rt::cpu {

namespace {

class SumCopiesKernel final : public Kernel {
public:
  bool communicates() const override { return true; }
  explicit SumCopiesKernel(const Node &n)
      : node_(n), axis_(n.stringAttr("axis", mesh_axis::kTensor)), copies_(n.intAttr("copies", 1)) {}

  llvm::Error run(KernelContext &ctx) override {
    const TensorView &in = ctx.inputs[0];
    TensorView &out = ctx.outputs[0];
    if (in.dtype != DType::F32)
      return kernelError(node_, "sums float32 gradients, got " + dtypeName(in.dtype));
    Communicator *axis = ctx.env ? ctx.env->group(axis_) : nullptr;
    if (!axis)
      return kernelError(node_, "no communicator for mesh axis '" + axis_ + "'");
    if (auto err = ctx.follow(*axis)) // the gradient is written
      return err;
    const float *x = static_cast<const float *>(in.data);
    float *y = static_cast<float *>(out.data);
    if (y != x)
      std::memcpy(y, x, in.bytes());
    if (axis->size() % copies_ != 0)
      return kernelError(node_, "group '" + axis_ + "' of " + llvm::Twine(axis->size()) +
                                    " ranks does not hold runs of " + llvm::Twine(copies_) + " copies");
    std::string name = axis_ + "/copies" + std::to_string(copies_);
    std::unique_ptr<Communicator> &group = ctx.env->subgroups[name];
    if (!group) { // collective over the axis's group: its ranks run the same programs, in order
      auto made = axis->splitGroup(axis->rank() / static_cast<int>(copies_), axis->rank(), name);
      if (!made)
        return made.takeError();
      group = std::move(*made);
    }
    return group->allReduce(y, static_cast<size_t>(out.numel()), DType::F32);
  }

private:
  const Node &node_;
  std::string axis_;
  int64_t copies_;
};

} // namespace

void registerSumCopiesKernel(KernelRegistry &r) {
  r.add("partita.SumCopies", kCpuDevice, [](const Node &n) -> llvm::Expected<std::unique_ptr<Kernel>> {
    if (n.input(0)->type().numel() == n.intAttr("numel", -1))
      return kernelError(n, "the copies are held whole on every rank; replicate-kv-heads' copies are split "
                            "over tp (compile again)");
    return std::unique_ptr<Kernel>(new SumCopiesKernel(n));
  });
}

} // namespace partita::rt::cpu
