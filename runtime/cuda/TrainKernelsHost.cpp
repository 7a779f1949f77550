//===- TrainKernelsHost.cpp - the CUDA kernels a training step adds --------===//
//
// ReduceSum/Mean/Max/Min, Expand, Equal, Not, Cast to and from integers and
// bool, and partita.EmbeddingGrad on the cuda device, as Kernels: each checks
// its node when made (what it does not take fails at load, naming the node).
//===----------------------------------------------------------------------===//
#include "compiler/ir/Graph.h"
#include "runtime/cuda/CudaDevice.h"
#include "runtime/cuda/KernelSupport.h"
#include "runtime/cuda/Strides.h"
#include "runtime/cuda/TrainKernels.h"
#include "runtime/kernels/KernelRegistry.h"
#include "runtime/kernels/NodeShapes.h"

namespace partita::rt::cuda {

namespace {

std::optional<gpu::Number> numberOf(DType t) {
  switch (t) {
  case DType::F32: return gpu::Number::F32;
  case DType::BF16: return gpu::Number::BF16;
  case DType::F16: return gpu::Number::F16;
  case DType::I64: return gpu::Number::I64;
  case DType::I32: return gpu::Number::I32;
  case DType::Bool: return gpu::Number::Bool;
  default: return std::nullopt;
  }
}

bool tooManyDims(const Node &n) {
  for (const Value *v : n.inputs())
    if (v && v->type().shape.size() > static_cast<size_t>(gpu::kMaxDims))
      return true;
  return n.output()->type().shape.size() > static_cast<size_t>(gpu::kMaxDims);
}

class ReduceKernel final : public Kernel {
public:
  ReduceKernel(gpu::Reduce kind, const gpu::Reduction &r) : kind_(kind), r_(r) {}
  llvm::Error run(KernelContext &ctx) override {
    gpu::reduce(kind_, ctx.inputs[0].as<const float>(), ctx.outputs[0].as<float>(), ctx.outputs[0].numel(), r_,
                streamOf(ctx.device));
    return llvm::Error::success();
  }

private:
  gpu::Reduce kind_;
  gpu::Reduction r_;
};

class EqualKernel final : public Kernel {
public:
  EqualKernel(gpu::Number type, const Shape &a, const Shape &b, const Shape &out)
      : type_(type), s_(broadcastOf(a, b, out)) {}
  llvm::Error run(KernelContext &ctx) override {
    gpu::equal(type_, ctx.inputs[0].data, ctx.inputs[1].data, ctx.outputs[0].as<uint8_t>(), ctx.outputs[0].numel(),
               s_, streamOf(ctx.device));
    return llvm::Error::success();
  }

private:
  gpu::Number type_;
  gpu::Broadcast s_;
};

class NotKernel final : public Kernel {
public:
  llvm::Error run(KernelContext &ctx) override {
    gpu::logicalNot(ctx.inputs[0].as<const uint8_t>(), ctx.outputs[0].as<uint8_t>(), ctx.outputs[0].numel(),
                    streamOf(ctx.device));
    return llvm::Error::success();
  }
};

class ConvertKernel final : public Kernel {
public:
  ConvertKernel(gpu::Number from, gpu::Number to) : from_(from), to_(to) {}
  llvm::Error run(KernelContext &ctx) override {
    gpu::convert(from_, to_, ctx.inputs[0].data, ctx.outputs[0].data, ctx.outputs[0].numel(), streamOf(ctx.device));
    return llvm::Error::success();
  }

private:
  gpu::Number from_, to_;
};

class EmbeddingGradKernel final : public Kernel {
public:
  explicit EmbeddingGradKernel(const Node &n)
      : rows_(n.output()->type().shape[0]), width_(n.output()->type().shape[1]), offset_(n.intAttr("offset", 0)) {}
  llvm::Error run(KernelContext &ctx) override {
    gpu::embeddingGrad(ctx.inputs[1].as<const int64_t>(), ctx.inputs[1].numel(), ctx.inputs[2].as<const float>(),
                       ctx.outputs[0].as<float>(), rows_, width_, offset_, streamOf(ctx.device));
    return llvm::Error::success();
  }

private:
  int64_t rows_, width_, offset_;
};

bool isFloat32(const Value *v) { return v && v->type().dtype == DType::F32; }

} // namespace

/// The Cast kernel: among float32, bf16, fp16, int64, int32 and bool, but
/// no float to an integer or bool (ONNX leaves out-of-range values undefined).
llvm::Expected<std::unique_ptr<Kernel>> makeCast(const Node &n) {
  auto from = numberOf(n.input(0)->type().dtype), to = numberOf(n.output()->type().dtype);
  bool fromFloat = from && (*from == gpu::Number::F32 || *from == gpu::Number::BF16 || *from == gpu::Number::F16);
  bool toFloat = to && (*to == gpu::Number::F32 || *to == gpu::Number::BF16 || *to == gpu::Number::F16);
  if (!from || !to || (fromFloat && !toFloat))
    return refuse(n, "a cast from " + dtypeName(n.input(0)->type().dtype) + " to " +
                         dtypeName(n.output()->type().dtype) +
                         " (among float32, bf16, fp16, int64, int32 and bool; no float to integer or bool)");
  return std::unique_ptr<Kernel>(new ConvertKernel(*from, *to));
}

void registerTrainKernels(KernelRegistry &r) {
  const std::pair<const char *, gpu::Reduce> reductions[] = {
      {"ReduceSum", gpu::Reduce::Sum}, {"ReduceMean", gpu::Reduce::Mean}, {"ReduceMax", gpu::Reduce::Max},
      {"ReduceMin", gpu::Reduce::Min}};
  for (auto [op, kind] : reductions)
    r.add(op, kCudaDevice, [kind = kind](const Node &n) -> llvm::Expected<std::unique_ptr<Kernel>> {
      if (!isFloat32(n.input(0)) || !isFloat32(n.output()) || tooManyDims(n) || n.input(0)->type().numel() == 0)
        return refuse(n, "its types or shape (float32, 1 to 8 dimensions, not empty)");
      std::vector<bool> reduced = reducedDims(n);
      if (reduced.empty())
        return refuse(n, "axes computed at run time");
      return std::unique_ptr<Kernel>(new ReduceKernel(kind, reductionOf(n.input(0)->type().shape, reduced)));
    });
  r.add("Expand", kCudaDevice, [](const Node &n) -> llvm::Expected<std::unique_ptr<Kernel>> {
    size_t bytes = dtypeSize(n.output()->type().dtype);
    if (tooManyDims(n) || !(bytes == 1 || bytes == 2 || bytes == 4 || bytes == 8))
      return refuse(n, "its shape or element size");
    const Shape &out = n.output()->type().shape; // a strided read, stride 0 along broadcast dims
    gpu::Permute p;
    p.rank = static_cast<int>(out.size());
    for (int d = 0; d < p.rank; ++d)
      p.shape[d] = out[d];
    broadcastStrides(n.input(0)->type().shape, out, p.inputStride);
    return makeStridedRead(p, static_cast<int>(bytes));
  });
  r.add("Equal", kCudaDevice, [](const Node &n) -> llvm::Expected<std::unique_ptr<Kernel>> {
    auto t = numberOf(n.input(0)->type().dtype);
    if (!t || n.input(1)->type().dtype != n.input(0)->type().dtype || tooManyDims(n))
      return refuse(n, "its types or rank");
    return std::unique_ptr<Kernel>(
        new EqualKernel(*t, n.input(0)->type().shape, n.input(1)->type().shape, n.output()->type().shape));
  });
  r.add("Not", kCudaDevice, [](const Node &n) -> llvm::Expected<std::unique_ptr<Kernel>> {
    return std::unique_ptr<Kernel>(new NotKernel());
  });
  r.add("partita.EmbeddingGrad", kCudaDevice, [](const Node &n) -> llvm::Expected<std::unique_ptr<Kernel>> {
    if (!isFloat32(n.output()) || !isFloat32(n.input(2)) || n.input(1)->type().dtype != DType::I64 ||
        n.output()->type().rank() != 2)
      return refuse(n, "its types (float32 gradients of a 2-D table, int64 ids)");
    return std::unique_ptr<Kernel>(new EmbeddingGradKernel(n));
  });
}

} // namespace partita::rt::cuda
