//===- SumCopiesKernel.cpp - partita.SumCopies ----------------------------===//
//
// The gradient of a weight whose blocks are copies (replicate-kv-heads: one
// kv head's projection per tensor-parallel rank that reads it) is the sum of
// the copies' gradients, in every copy. Held whole (replicated), the kernel
// sums each run of `copies` blocks locally; split over tp (each rank one
// block, or a ZeRO shard of it), it all-reduces over the `copies`
// consecutive ranks holding the run, a group split once per rank from the
// axis's (RuntimeEnv::subgroups).
//===----------------------------------------------------------------------===//
#include "compiler/ops/OpRegistry.h"
#include "runtime/comm/Communicator.h"
#include "runtime/cpu/CpuKernels.h"
#include <cstring>
#include <vector>

namespace partita::rt::cpu {

namespace {

class SumCopiesKernel final : public Kernel {
public:
  explicit SumCopiesKernel(const Node &n)
      : node_(n), axis_(n.stringAttr("axis", "tp")), copies_(n.intAttr("copies", 1)), block_(n.intAttr("block", 1)),
        whole_(n.input(0)->type().numel() == n.intAttr("numel", -1)) {
    const Shape &s = n.input(0)->type().shape;
    int64_t dim = normalizeAxis(n.intAttr("dim", 0), static_cast<int64_t>(s.size()));
    for (int64_t d = 0; d < static_cast<int64_t>(s.size()); ++d)
      (d < dim ? outer_ : d > dim ? inner_ : width_) *= s[static_cast<size_t>(d)];
  }

  llvm::Error run(KernelContext &ctx) override {
    const TensorView &in = ctx.inputs[0];
    TensorView &out = ctx.outputs[0];
    if (in.dtype != DType::F32)
      return kernelError(node_, "sums float32 gradients, got " + dtypeName(in.dtype));
    const float *x = static_cast<const float *>(in.data);
    float *y = static_cast<float *>(out.data);
    if (whole_)
      return sumLocally(x, y);
    if (y != x)
      std::memcpy(y, x, in.bytes());
    Communicator *axis = ctx.env ? ctx.env->group(axis_) : nullptr;
    if (!axis)
      return kernelError(node_, "no communicator for mesh axis '" + axis_ + "'");
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
  llvm::Error sumLocally(const float *x, float *y) const {
    int64_t run = block_ * copies_;
    if (width_ % run != 0)
      return kernelError(node_, "width " + llvm::Twine(width_) + " is not whole runs of " + llvm::Twine(copies_) +
                                    " blocks of " + llvm::Twine(block_));
    std::vector<float> sum(static_cast<size_t>(block_ * inner_));
    for (int64_t o = 0; o < outer_; ++o)
      for (int64_t r = 0; r < width_; r += run) {
        std::fill(sum.begin(), sum.end(), 0.0f);
        for (int64_t c = 0; c < copies_; ++c) {
          const float *src = x + (o * width_ + r + c * block_) * inner_;
          for (size_t i = 0; i < sum.size(); ++i)
            sum[i] += src[i];
        }
        for (int64_t c = 0; c < copies_; ++c)
          std::memcpy(y + (o * width_ + r + c * block_) * inner_, sum.data(), sum.size() * sizeof(float));
      }
    return llvm::Error::success();
  }

  const Node &node_;
  std::string axis_;
  int64_t copies_, block_;
  bool whole_;
  int64_t outer_ = 1, width_ = 1, inner_ = 1;
};

} // namespace

void registerSumCopiesKernel(KernelRegistry &r) {
  r.add("partita.SumCopies", kCpuDevice, [](const Node &n) -> llvm::Expected<std::unique_ptr<Kernel>> {
    return std::unique_ptr<Kernel>(new SumCopiesKernel(n));
  });
}

} // namespace partita::rt::cpu
