//===- RowKernelsHost.cpp - the CUDA kernels over rows, as Kernels ---------===//
//
// LayerNormalization, Softmax/LogSoftmax, Where, Gather (axis 0), Split and
// Concat on the cuda device: each checks its node when made (a type or layout
// it does not take fails at load, naming the node) and enqueues its launcher
// (RowKernels.h) on the compute stream.
//===----------------------------------------------------------------------===//
#include "compiler/ir/Graph.h"
#include "compiler/ops/OpRegistry.h"
#include "runtime/cuda/CudaDevice.h"
#include "runtime/cuda/KernelSupport.h"
#include "runtime/cuda/RowKernels.h"
#include "runtime/cuda/Strides.h"
#include "runtime/kernels/KernelRegistry.h"
#include "runtime/kernels/NodeShapes.h"

namespace partita::rt::cuda {

namespace {


class LayerNormKernel final : public Kernel {
public:
  LayerNormKernel(const Node &n, int64_t axis)
      : eps_(static_cast<float>(n.floatAttr("epsilon", 1e-5))) {
    const Shape &s = n.input(0)->type().shape;
    rows_ = 1;
    len_ = 1;
    for (int64_t i = 0; i < static_cast<int64_t>(s.size()); ++i)
      (i < axis ? rows_ : len_) *= s[i];
    gLen_ = n.input(1)->type().numel();
    bLen_ = n.numInputs() > 2 && n.input(2) ? n.input(2)->type().numel() : 0;
  }
  llvm::Error run(KernelContext &ctx) override {
    auto out = [&](size_t k) { return ctx.outputs.size() > k ? ctx.outputs[k].as<float>() : nullptr; };
    gpu::layerNorm(ctx.inputs[0].as<const float>(), ctx.inputs[1].as<const float>(), gLen_,
                   bLen_ ? ctx.inputs[2].as<const float>() : nullptr, bLen_ ? bLen_ : 1, out(0), out(1), out(2),
                   rows_, len_, eps_, streamOf(ctx.device));
    return llvm::Error::success();
  }

private:
  float eps_;
  int64_t rows_, len_, gLen_, bLen_;
};

class SoftmaxKernel final : public Kernel {
public:
  SoftmaxKernel(const Shape &s, int64_t axis, bool log) : split_(s, axis), log_(log) {}
  llvm::Error run(KernelContext &ctx) override {
    gpu::softmax(ctx.inputs[0].as<const float>(), ctx.outputs[0].as<float>(), split_.outer, split_.len,
                 split_.inner, log_, streamOf(ctx.device));
    return llvm::Error::success();
  }

private:
  AxisSplit split_;
  bool log_;
};

class WhereKernel final : public Kernel {
public:
  explicit WhereKernel(const Node &n) {
    const Shape &out = n.output()->type().shape;
    s_.rank = static_cast<int>(out.size());
    for (int d = 0; d < s_.rank; ++d)
      s_.shape[d] = out[d];
    broadcastStrides(n.input(0)->type().shape, out, s_.strideCond);
    broadcastStrides(n.input(1)->type().shape, out, s_.strideA);
    broadcastStrides(n.input(2)->type().shape, out, s_.strideB);
  }
  llvm::Error run(KernelContext &ctx) override {
    gpu::where(ctx.inputs[0].as<const uint8_t>(), ctx.inputs[1].as<const float>(), ctx.inputs[2].as<const float>(),
               ctx.outputs[0].as<float>(), ctx.outputs[0].numel(), s_, streamOf(ctx.device));
    return llvm::Error::success();
  }

private:
  gpu::Select s_;
};

class GatherKernel final : public Kernel {
public:
  explicit GatherKernel(const Node &n) {
    const Shape &table = n.input(0)->type().shape;
    rows_ = table[0];
    rowBytes_ = static_cast<int64_t>(dtypeSize(n.input(0)->type().dtype));
    for (size_t d = 1; d < table.size(); ++d)
      rowBytes_ *= table[d];
  }
  llvm::Error run(KernelContext &ctx) override {
    gpu::gatherRows(ctx.inputs[0].data, rows_, rowBytes_, ctx.inputs[1].as<const int64_t>(), ctx.inputs[1].numel(),
                    ctx.outputs[0].data, streamOf(ctx.device));
    return llvm::Error::success();
  }

private:
  int64_t rows_, rowBytes_;
};

/// Split (one input, several outputs) or Concat (several inputs, one output)
/// along an axis: each piece is `outer` rows copied with their pitches.
class AxisPiecesKernel final : public Kernel {
public:
  AxisPiecesKernel(const Node &n, bool concat) : concat_(concat) {
    const Value *whole = concat ? n.output() : n.input(0);
    const Shape &s = whole->type().shape;
    int64_t axis = normalizeAxis(n.intAttr("axis", 0), static_cast<int64_t>(s.size()));
    size_t elem = dtypeSize(whole->type().dtype);
    AxisSplit a(s, axis);
    outer_ = static_cast<size_t>(a.outer);
    wholePitch_ = static_cast<size_t>(a.len * a.inner) * elem;
    for (const Value *piece : concat ? n.inputs() : n.outputs())
      widths_.push_back(static_cast<size_t>(piece->type().shape[axis] * a.inner) * elem);
  }
  llvm::Error run(KernelContext &ctx) override {
    char *whole = static_cast<char *>(concat_ ? ctx.outputs[0].data : ctx.inputs[0].data);
    size_t at = 0;
    for (size_t k = 0; k < widths_.size(); ++k) {
      char *piece = static_cast<char *>(concat_ ? ctx.inputs[k].data : ctx.outputs[k].data);
      if (concat_)
        gpu::copyRows(whole + at, wholePitch_, piece, widths_[k], widths_[k], outer_, streamOf(ctx.device));
      else
        gpu::copyRows(piece, widths_[k], whole + at, wholePitch_, widths_[k], outer_, streamOf(ctx.device));
      at += widths_[k];
    }
    return llvm::Error::success();
  }

private:
  bool concat_;
  size_t outer_ = 1, wholePitch_ = 0;
  std::vector<size_t> widths_;
};

bool isF32(const Value *v) { return !v || v->type().dtype == DType::F32; }

} // namespace

void registerRowKernels(KernelRegistry &r) {
  r.add("LayerNormalization", kCudaDevice, [](const Node &n) -> llvm::Expected<std::unique_ptr<Kernel>> {
    for (const Value *v : n.inputs())
      if (!isF32(v))
        return refuse(n, "its types (float32 only)");
    int64_t rank = n.input(0)->type().rank(), axis = normalizeAxis(n.intAttr("axis", -1), rank);
    int64_t len = 1;
    for (int64_t i = axis; i < rank; ++i)
      len *= n.input(0)->type().shape[i];
    for (size_t i = 1; i < n.numInputs(); ++i)
      if (n.input(i) && len % n.input(i)->type().numel() != 0)
        return refuse(n, "scale or bias that do not tile the normalized dimensions");
    return std::unique_ptr<Kernel>(new LayerNormKernel(n, axis));
  });
  for (bool log : {false, true})
    r.add(log ? "LogSoftmax" : "Softmax", kCudaDevice, [log](const Node &n) -> llvm::Expected<std::unique_ptr<Kernel>> {
      if (!isF32(n.input(0)) || !isF32(n.output()))
        return refuse(n, "its types (float32 only)");
      const Shape &s = n.input(0)->type().shape;
      int64_t axis = normalizeAxis(n.intAttr("axis", -1), static_cast<int64_t>(s.size()));
      return std::unique_ptr<Kernel>(new SoftmaxKernel(s, axis, log));
    });
  r.add("Where", kCudaDevice, [](const Node &n) -> llvm::Expected<std::unique_ptr<Kernel>> {
    if (n.input(0)->type().dtype != DType::Bool || !isF32(n.input(1)) || !isF32(n.input(2)) ||
        n.output()->type().shape.size() > static_cast<size_t>(gpu::kMaxDims))
      return refuse(n, "its types or rank (a bool condition, float32 values, up to 8 dimensions)");
    return std::unique_ptr<Kernel>(new WhereKernel(n));
  });
  r.add("Gather", kCudaDevice, [](const Node &n) -> llvm::Expected<std::unique_ptr<Kernel>> {
    if (n.intAttr("axis", 0) != 0 || n.input(1)->type().dtype != DType::I64 || n.input(0)->type().rank() < 1)
      return refuse(n, "a gather other than rows (axis 0) by int64 indices");
    return std::unique_ptr<Kernel>(new GatherKernel(n));
  });
  r.add("Split", kCudaDevice, [](const Node &n) -> llvm::Expected<std::unique_ptr<Kernel>> {
    return std::unique_ptr<Kernel>(new AxisPiecesKernel(n, false));
  });
  r.add("Concat", kCudaDevice, [](const Node &n) -> llvm::Expected<std::unique_ptr<Kernel>> {
    return std::unique_ptr<Kernel>(new AxisPiecesKernel(n, true));
  });
}

} // namespace partita::rt::cuda
