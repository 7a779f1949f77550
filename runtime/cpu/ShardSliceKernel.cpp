//===- ShardSliceKernel.cpp - partita.ShardSlice at run time ---------------===//
//
// A rank's block of a value every rank holds whole (the batch of a value
// computed replicated, the part of a parameter ZeRO's step updates), taken
// by the coordinate the runtime knows: the rank's place in the group of
// `axis` (XLA's partition-id). Localize keeps such slices for the axes
// compile asks (runtime-slices=dp), so the ranks along the axis run one
// program instead of one each with their offsets as constants.
//   dim `dim` is [outer][parts][part]: the result is block `coord` of parts
//   in each of the outer blocks, [outer][part].
//===----------------------------------------------------------------------===//
#include "compiler/ops/OpRegistry.h"
#include "runtime/comm/Communicator.h"
#include "runtime/cpu/CpuKernels.h"
#include <cstring>

namespace partita::rt::cpu {

namespace {

class ShardSliceKernel final : public Kernel {
public:
  explicit ShardSliceKernel(const Node &n) : node_(n), axis_(n.stringAttr("axis", "")), parts_(n.intAttr("parts", 1)) {
    const Shape &s = n.input(0)->type().shape;
    int64_t dim = normalizeAxis(n.intAttr("dim", 0), static_cast<int64_t>(s.size()));
    int64_t outer = n.intAttr("outer", 1);
    size_t elem = dtypeSize(n.input(0)->type().dtype), inner = elem;
    for (size_t d = static_cast<size_t>(dim) + 1; d < s.size(); ++d)
      inner *= static_cast<size_t>(s[d]);
    rows_ = 1;
    for (int64_t d = 0; d < dim; ++d)
      rows_ *= s[d];
    rows_ *= outer; // each outer block of dim is one more row
    partBytes_ = static_cast<size_t>(s[dim] / outer / parts_) * inner;
  }

  llvm::Error run(KernelContext &ctx) override {
    auto group = axisGroup(node_, ctx, axis_, parts_); // the rank's coordinate is its place in it
    if (!group)
      return group.takeError();
    const char *in = static_cast<const char *>(ctx.inputs[0].data);
    char *out = static_cast<char *>(ctx.outputs[0].data);
    size_t coord = static_cast<size_t>((*group)->rank()), parts = static_cast<size_t>(parts_);
    for (int64_t r = 0; r < rows_; ++r)
      std::memcpy(out + static_cast<size_t>(r) * partBytes_,
                  in + (static_cast<size_t>(r) * parts + coord) * partBytes_, partBytes_);
    return llvm::Error::success();
  }

private:
  const Node &node_;
  std::string axis_;
  int64_t parts_ = 1, rows_ = 1;
  size_t partBytes_ = 0;
};

} // namespace

void registerShardSliceKernel(KernelRegistry &r) {
  r.add("partita.ShardSlice", kCpuDevice, [](const Node &n) -> llvm::Expected<std::unique_ptr<Kernel>> {
    const Shape &s = n.input(0)->type().shape;
    int64_t dim = normalizeAxis(n.intAttr("dim", 0), static_cast<int64_t>(s.size()));
    int64_t parts = n.intAttr("parts", 0), outer = n.intAttr("outer", 1);
    if (parts < 1)
      return kernelError(n, "a slice without a group size (run localize before loading)");
    if (dim < 0 || outer < 1 || s[dim] % (outer * parts) != 0)
      return kernelError(n, "dimension " + llvm::Twine(dim) + " does not split into " + llvm::Twine(outer) + " x " +
                                llvm::Twine(parts) + " blocks");
    return std::unique_ptr<Kernel>(new ShardSliceKernel(n));
  });
}

} // namespace partita::rt::cpu
