//===- CudaKernels.cpp - the CUDA device's kernels and its registration ----===//
//
// The Kernel classes the executor runs on `--device cuda`: each checks its
// node's types when made (an op or type without a CUDA kernel fails at load,
// naming the node) and enqueues its launcher (GpuKernels.h) on the device's
// compute stream. Registered here too: the training loop's kernels and the
// `cuda` entry of the device registry.
//===----------------------------------------------------------------------===//
#include "compiler/ir/Graph.h"
#include "compiler/ops/OpRegistry.h"
#include "runtime/core/DeviceRegistry.h"
#include "runtime/cuda/CudaDevice.h"
#include "runtime/cuda/KernelSupport.h"
#include "runtime/cuda/GemmKernel.h"
#include "runtime/cuda/GpuKernels.h"
#include "runtime/cuda/Strides.h"
#include "runtime/kernels/KernelRegistry.h"
#include "runtime/kernels/NodeShapes.h"
#include "llvm/ADT/Twine.h"

namespace partita::rt::cuda {

void registerRowKernels(KernelRegistry &r);   // RowKernelsHost.cpp
void registerTrainKernels(KernelRegistry &r); // TrainKernelsHost.cpp
llvm::Expected<std::unique_ptr<Kernel>> makeCast(const Node &n);    // TrainKernelsHost.cpp

namespace {

bool allF32(const Node &n) {
  for (const Value *v : n.inputs())
    if (v && v->type().dtype != DType::F32)
      return false;
  for (const Value *v : n.outputs())
    if (v->type().dtype != DType::F32)
      return false;
  return true;
}

std::optional<gpu::Number> floating(DType t) {
  switch (t) {
  case DType::F32: return gpu::Number::F32;
  case DType::BF16: return gpu::Number::BF16;
  case DType::F16: return gpu::Number::F16;
  default: return std::nullopt;
  }
}

class UnaryKernel final : public Kernel {
public:
  explicit UnaryKernel(gpu::Unary op) : op_(op) {}
  llvm::Error run(KernelContext &ctx) override {
    gpu::unary(op_, ctx.inputs[0].as<const float>(), ctx.outputs[0].as<float>(), ctx.outputs[0].numel(),
               streamOf(ctx.device));
    return llvm::Error::success();
  }

private:
  gpu::Unary op_;
};

class BinaryKernel final : public Kernel {
public:
  BinaryKernel(gpu::Binary op, const Shape &a, const Shape &b, const Shape &out) : op_(op) {
    if (a == out && b == out)
      return;
    broadcast_ = true;
    shape_ = broadcastOf(a, b, out);
  }
  llvm::Error run(KernelContext &ctx) override {
    gpu::binary(op_, ctx.inputs[0].as<const float>(), ctx.inputs[1].as<const float>(), ctx.outputs[0].as<float>(),
                ctx.outputs[0].numel(), broadcast_ ? &shape_ : nullptr, streamOf(ctx.device));
    return llvm::Error::success();
  }

private:
  gpu::Binary op_;
  bool broadcast_ = false;
  gpu::Broadcast shape_;
};

class CopyKernel final : public Kernel {
public:
  llvm::Error run(KernelContext &ctx) override {
    if (ctx.outputs[0].data != ctx.inputs[0].data)
      gpu::copy(ctx.outputs[0].data, ctx.inputs[0].data, ctx.outputs[0].bytes(), streamOf(ctx.device));
    return llvm::Error::success();
  }
};

class AdamWKernel final : public Kernel {
public:
  explicit AdamWKernel(const Node &n) : c_(n) {}
  llvm::Error run(KernelContext &ctx) override {
    const auto &in = ctx.inputs;
    gpu::AdamW a{in[0].as<const float>(), in[1].as<const float>(), in[2].as<const float>(),
                 in.size() > 7 ? in[7].as<const float>() : nullptr,
                 c_.beta1, c_.beta2, c_.epsilon, c_.weightDecay,
                 in[3].as<const float>(), in[4].as<const float>(), in[5].as<const float>(), in[6].as<const float>(),
                 ctx.outputs[0].as<float>(), ctx.outputs[1].as<float>(), ctx.outputs[2].as<float>(),
                 in[3].numel()};
    gpu::adamw(a, streamOf(ctx.device));
    return llvm::Error::success();
  }

private:
  AdamWConstants c_;
};

// The loop kernels' types are float32 or half by LoopKernels.h's contract;
// another is kept as the device's error (finishWork reports it).
bool loopType(Device &device, DType t) {
  return floating(t) || !static_cast<CudaDevice &>(device).check(cudaErrorInvalidValue, "a loop kernel's type");
}
void accumulateOn(Device &device, void *sum, const void *g, DType gType, int64_t n, bool first) {
  if (floating(gType))
    gpu::accumulate(static_cast<float *>(sum), g, *floating(gType), n, first, streamOf(device));
  else
    loopType(device, gType);
}
void roundOn(Device &device, void *h, const void *sum, DType hType, int64_t n) {
  if (floating(hType))
    gpu::roundTo(h, static_cast<const float *>(sum), *floating(hType), n, streamOf(device));
  else
    loopType(device, hType);
}
void addOn(Device &device, const void *x, void *y, DType type, int64_t n) {
  if (floating(type))
    gpu::add(x, y, *floating(type), n, streamOf(device));
  else
    loopType(device, type);
}

void registerCudaKernels(KernelRegistry &r) {
#define PARTITA_CUDA_UNARY(name, id, expr)                                                                         \
  r.add(name, kCudaDevice, [](const Node &n) -> llvm::Expected<std::unique_ptr<Kernel>> {                          \
    if (!allF32(n))                                                                                                \
      return refuse(n, "its types (float32 only)");                                                           \
    return std::unique_ptr<Kernel>(new UnaryKernel(gpu::Unary::id));                                               \
  });
#define PARTITA_CUDA_BINARY(name, id, expr)                                                                        \
  r.add(name, kCudaDevice, [](const Node &n) -> llvm::Expected<std::unique_ptr<Kernel>> {                          \
    if (!allF32(n) || n.numInputs() != 2 || !n.input(0) || !n.input(1))                                             \
      return refuse(n, "its operands (two, float32)");                                                              \
    if (n.output()->type().shape.size() > static_cast<size_t>(gpu::kMaxDims))                                      \
      return refuse(n, "a result of more than 8 dimensions");                                                 \
    return std::unique_ptr<Kernel>(new BinaryKernel(gpu::Binary::id, n.input(0)->type().shape,                   \
                                                     n.input(1)->type().shape, n.output()->type().shape));         \
  });
  PARTITA_UNARY_OPS(PARTITA_CUDA_UNARY)
  PARTITA_BINARY_OPS(PARTITA_CUDA_BINARY)
#undef PARTITA_CUDA_UNARY
#undef PARTITA_CUDA_BINARY
  r.add("Cast", kCudaDevice, makeCast);
  for (const char *op : {"Reshape", "Squeeze", "Unsqueeze", "Identity", "Flatten"})
    r.add(op, kCudaDevice, [](const Node &) -> llvm::Expected<std::unique_ptr<Kernel>> {
      return std::unique_ptr<Kernel>(new CopyKernel());
    });
  r.add("Transpose", kCudaDevice, [](const Node &n) -> llvm::Expected<std::unique_ptr<Kernel>> {
    const Shape &in = n.input(0)->type().shape;
    size_t bytes = dtypeSize(n.input(0)->type().dtype);
    if (in.size() > static_cast<size_t>(gpu::kMaxDims) || !(bytes == 1 || bytes == 2 || bytes == 4 || bytes == 8))
      return refuse(n, "a transpose of more than 8 dimensions or of odd-sized elements");
    std::vector<int64_t> perm = transposePerm(n), stride(in.size(), 1);
    for (int d = static_cast<int>(in.size()) - 2; d >= 0; --d)
      stride[d] = stride[d + 1] * in[d + 1];
    gpu::Permute p;
    p.rank = static_cast<int>(perm.size());
    for (int d = 0; d < p.rank; ++d) {
      p.shape[d] = in[perm[d]];
      p.inputStride[d] = stride[perm[d]];
    }
    return makeStridedRead(p, static_cast<int>(bytes));
  });
  r.add("partita.AdamW", kCudaDevice, [](const Node &n) -> llvm::Expected<std::unique_ptr<Kernel>> {
    if (!allF32(n))
      return refuse(n, "its types (float32 only)");
    return std::unique_ptr<Kernel>(new AdamWKernel(n));
  });
  // GEMMs on cuBLASLt: bias and ReLU / tanh-GELU epilogues, bf16 or fp16
  // operands read through mixed precision's widening Casts.
  r.add("Gemm", kCudaDevice, [](const Node &n) { return makeGemmKernel(n, {}, nullptr); });
  for (const char *producer : {"MatMul", "partita.Linear"}) {
    r.add(producer, kCudaDevice, [](const Node &n) { return makeGemmKernel(n, {}, nullptr); });
    for (const char *consumer : {"Relu", "partita.FastGelu"})
      r.addEpilogue(producer, consumer, kCudaDevice,
                    [](const Node &p, const Node &c) { return makeGemmKernel(p, {}, &c); });
    r.addOperandFusion(producer, "Cast", kCudaDevice, makeGemmKernel);
  }
  registerRowKernels(r);
  registerTrainKernels(r);
  r.setLoopKernels(kCudaDevice, LoopKernels{accumulateOn, roundOn, addOn});
}

/// The `cuda` device: the rank's GPU by its local rank.
struct RegisterDevice {
  RegisterDevice() {
    DeviceRegistry::get().add({"cuda", "an NVIDIA GPU per rank, by local rank (CUDA_VISIBLE_DEVICES respected)",
                               kCudaDevice, []() -> llvm::Expected<std::unique_ptr<Device>> {
                                 auto device = CudaDevice::create(CudaDevice::localRank());
                                 if (!device)
                                   return device.takeError();
                                 return std::unique_ptr<Device>(std::move(*device));
                               }});
  }
};

} // namespace

/// y[i] = x at the offset `p` gives output element i (Transpose, Expand).
class StridedReadKernel final : public Kernel {
public:
  StridedReadKernel(const gpu::Permute &p, int elementBytes) : bytes_(elementBytes), p_(p) {}
  llvm::Error run(KernelContext &ctx) override {
    gpu::transpose(ctx.inputs[0].data, ctx.outputs[0].data, bytes_, p_, ctx.outputs[0].numel(), streamOf(ctx.device));
    return llvm::Error::success();
  }

private:
  int bytes_;
  gpu::Permute p_;
};

std::unique_ptr<Kernel> makeStridedRead(const gpu::Permute &p, int elementBytes) {
  return std::make_unique<StridedReadKernel>(p, elementBytes);
}

} // namespace partita::rt::cuda

// Kept in the link by this (unmangled) name: runtime/cuda/CMakeLists.txt.
extern "C" {
partita::rt::KernelRegistry::Registrar partita_cuda_kernels(partita::rt::cuda::registerCudaKernels);
}
static partita::rt::cuda::RegisterDevice partitaCudaDevice;
