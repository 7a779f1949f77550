//===- NormKernels.cpp - Softmax, LogSoftmax, LayerNormalization (f32) ----===//
#include "compiler/ops/OpRegistry.h"
#include "runtime/cpu/CpuKernels.h"
#include "runtime/cpu/FastMath.h"
#include "runtime/cpu/Dnnl.h"
#include "runtime/cpu/Parallel.h"
#include "runtime/kernels/NodeShapes.h"
#include <cmath>

namespace partita::rt::cpu {

namespace {


class SoftmaxKernel final : public Kernel {
public:
  SoftmaxKernel(const Shape &s, int64_t axis, bool log) : split_(s, axis), log_(log) {}
  llvm::Error run(KernelContext &ctx) override {
    const float *x = ctx.inputs[0].as<float>();
    float *y = ctx.outputs[0].as<float>();
    int64_t len = split_.len, inner = split_.inner;
    parallelFor(split_.outer * inner, 64, [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        int64_t o = r / inner, i = r % inner;
        const float *px = x + o * len * inner + i;
        float *py = y + o * len * inner + i;
        float mx = -INFINITY;
        for (int64_t k = 0; k < len; ++k)
          mx = std::max(mx, px[k * inner]);
        float sum = 0;
        for (int64_t k = 0; k < len; ++k) {
          float v = std::exp(px[k * inner] - mx);
          py[k * inner] = v;
          sum += v;
        }
        if (log_) {
          float ls = std::log(sum) + mx;
          for (int64_t k = 0; k < len; ++k)
            py[k * inner] = px[k * inner] - ls;
        } else {
          float inv = 1.0f / sum;
          for (int64_t k = 0; k < len; ++k)
            py[k * inner] *= inv;
        }
      }
    });
    return llvm::Error::success();
  }

private:
  AxisSplit split_;
  bool log_;
};

class LayerNormKernel final : public Kernel {
public:
  LayerNormKernel(const Node &n, int64_t axis) : eps_(static_cast<float>(n.floatAttr("epsilon", 1e-5))) {
    const Shape &s = n.input(0)->type().shape;
    for (int64_t i = 0; i < static_cast<int64_t>(s.size()); ++i)
      (i < axis ? rows_ : len_) *= s[i];
    scaleLen_ = n.input(1)->type().numel();
    biasLen_ = n.input(2) ? n.input(2)->type().numel() : 0;
  }
  llvm::Error run(KernelContext &ctx) override {
    const float *x = ctx.inputs[0].as<float>(), *g = ctx.inputs[1].as<float>();
    const float *bias = ctx.inputs.size() > 2 ? ctx.inputs[2].as<float>() : nullptr;
    float *y = ctx.outputs[0].as<float>();
    float *meanOut = ctx.outputs.size() > 1 ? ctx.outputs[1].as<float>() : nullptr;
    float *rstdOut = ctx.outputs.size() > 2 ? ctx.outputs[2].as<float>() : nullptr;
    int64_t len = len_, gl = scaleLen_, bl = biasLen_;
    parallelFor(rows_, 16, [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        const float *px = x + r * len;
        float *py = y + r * len;
        float mean = laneSum<float>(len, [&](int64_t i) { return px[i]; }) / static_cast<float>(len);
        float sq = laneSum<float>(len, [&](int64_t i) {
          float d = px[i] - mean;
          return d * d;
        });
        float rstd = 1.0f / std::sqrt(sq / static_cast<float>(len) + eps_);
        // scale/bias broadcast over the normalized dims (trailing-aligned);
        // the common case (both cover them exactly) is a plain vector loop.
        if (gl == len && (!bias || bl == len)) {
          if (bias)
            for (int64_t i = 0; i < len; ++i)
              py[i] = (px[i] - mean) * rstd * g[i] + bias[i];
          else
            for (int64_t i = 0; i < len; ++i)
              py[i] = (px[i] - mean) * rstd * g[i];
        } else {
          for (int64_t i = 0; i < len; ++i) {
            float v = (px[i] - mean) * rstd * g[i % gl];
            py[i] = bias ? v + bias[i % bl] : v;
          }
        }
        if (meanOut)
          meanOut[r] = mean;
        if (rstdOut)
          rstdOut[r] = rstd;
      }
    });
    return llvm::Error::success();
  }

private:
  float eps_;
  int64_t rows_ = 1, len_ = 1, scaleLen_ = 1, biasLen_ = 0;
};

/// Softmax over a contiguous last axis: oneDNN's JIT softmax primitive.
class DnnlSoftmaxKernel final : public Kernel {
public:
  DnnlSoftmaxKernel(int64_t rows, int64_t len) {
    desc_ = dnnl::memory::desc({rows, len}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::ab);
    dnnl::softmax_forward::desc d(dnnl::prop_kind::forward_inference, desc_, 1);
    prim_ = dnnl::softmax_forward(dnnl::softmax_forward::primitive_desc(d, dnnlEngine()));
  }
  llvm::Error run(KernelContext &ctx) override {
    const auto &engine = dnnlEngine();
    prim_.execute(dnnlStream(), {{DNNL_ARG_SRC, dnnl::memory(desc_, engine, ctx.inputs[0].data)},
                                 {DNNL_ARG_DST, dnnl::memory(desc_, engine, ctx.outputs[0].data)}});
    return llvm::Error::success();
  }

private:
  dnnl::memory::desc desc_;
  dnnl::softmax_forward prim_;
};

llvm::Expected<std::unique_ptr<Kernel>> makeSoftmax(const Node &n, bool log) {
  if (!allOfType(n, DType::F32))
    return kernelError(n, "the CPU softmax kernel supports f32 only");
  const Shape &s = n.input(0)->type().shape;
  int64_t axis = normalizeAxis(n.intAttr("axis", -1), static_cast<int64_t>(s.size()));
  if (!log && axis == static_cast<int64_t>(s.size()) - 1 && numElements(s) > 0)
    return std::unique_ptr<Kernel>(new DnnlSoftmaxKernel(numElements(s) / s.back(), s.back()));
  return std::unique_ptr<Kernel>(new SoftmaxKernel(s, axis, log));
}

} // namespace

void registerNormKernels(KernelRegistry &r) {
  r.add("Softmax", kCpuDevice, [](const Node &n) { return makeSoftmax(n, false); });
  r.add("LogSoftmax", kCpuDevice, [](const Node &n) { return makeSoftmax(n, true); });
  r.add("LayerNormalization", kCpuDevice, [](const Node &n) -> llvm::Expected<std::unique_ptr<Kernel>> {
    if (n.input(0)->type().dtype != DType::F32 || n.output()->type().dtype != DType::F32)
      return kernelError(n, "the CPU LayerNormalization kernel supports f32 only");
    // Scale/bias must cover the normalized dims exactly up to leading 1s.
    int64_t axis = normalizeAxis(n.intAttr("axis", -1), n.input(0)->type().rank());
    int64_t normLen = 1;
    for (int64_t i = axis; i < n.input(0)->type().rank(); ++i)
      normLen *= n.input(0)->type().shape[i];
    for (size_t i = 1; i < n.numInputs(); ++i)
      if (n.input(i) && normLen % n.input(i)->type().numel() != 0)
        return kernelError(n, "scale/bias do not tile the normalized dimensions");
    return std::unique_ptr<Kernel>(new LayerNormKernel(n, axis));
  });
}

} // namespace partita::rt::cpu
