//===- FlatShardsKernels.cpp - partita.FlattenShards / UnflattenShards -----===//
//
// Copies of contiguous runs (compiler/ops/FlatShards.h); the padding of a
// flat buffer is zeroed. Any dtype: the runs are bytes.
//===----------------------------------------------------------------------===//
#include "compiler/ops/FlatShards.h"
#include "runtime/cpu/CpuKernels.h"
#include <cstring>

namespace partita::rt::cpu {

namespace {

class FlatShardsKernel final : public Kernel {
public:
  FlatShardsKernel(const Node &n, bool flatten) : flatten_(flatten) {
    const TensorType &flat = flatten ? n.output()->type() : n.input(0)->type();
    shape_ = flatten ? n.input(0)->type().shape : n.output()->type().shape;
    layout_ = FlatShardsLayout{n.intAttr("dim", 0), n.intAttr("blocks", 1), n.intAttr("outer", 1), 0};
    layout_.length = flat.shape[0] / layout_.blocks;
    if (shape_.empty())
      layout_.dim = 0;
    else if (layout_.dim < 0)
      layout_.dim += static_cast<int64_t>(shape_.size());
    elem_ = dtypeSize(flat.dtype);
  }

  llvm::Error run(KernelContext &ctx) override {
    char *out = static_cast<char *>(ctx.outputs[0].data);
    const char *in = static_cast<const char *>(ctx.inputs[0].data);
    size_t e = elem_;
    if (flatten_) // the padding: zeros after each block's elements
      std::memset(out, 0, ctx.outputs[0].bytes());
    forEachShardRun(shape_, layout_, [&](int64_t, int64_t x, int64_t f, int64_t count) {
      if (flatten_)
        std::memcpy(out + f * e, in + x * e, static_cast<size_t>(count) * e);
      else
        std::memcpy(out + x * e, in + f * e, static_cast<size_t>(count) * e);
    });
    return llvm::Error::success();
  }

private:
  bool flatten_;
  Shape shape_;
  FlatShardsLayout layout_;
  size_t elem_ = 4;
};

} // namespace

void registerFlatShardsKernels(KernelRegistry &r) {
  for (bool flatten : {true, false})
    r.add(flatten ? "partita.FlattenShards" : "partita.UnflattenShards", kCpuDevice,
          [flatten](const Node &n) -> llvm::Expected<std::unique_ptr<Kernel>> {
            return std::unique_ptr<Kernel>(new FlatShardsKernel(n, flatten));
          });
}

} // namespace partita::rt::cpu
