//===- OptimizerKernels.cpp - partita.AdamW in one pass over memory (f32) --===//
#include "runtime/cpu/CpuKernels.h"
#include "runtime/cpu/Parallel.h"
#include <cmath>

namespace partita::rt::cpu {

namespace {
class AdamWKernel final : public Kernel {
public:
  explicit AdamWKernel(const Node &n)
      : b1_(static_cast<float>(n.floatAttr("beta1", 0.9))), b2_(static_cast<float>(n.floatAttr("beta2", 0.999))),
        eps_(static_cast<float>(n.floatAttr("epsilon", 1e-8))),
        wd_(static_cast<float>(n.floatAttr("weight_decay", 0.01))) {}

  llvm::Error run(KernelContext &ctx) override {
    float lr = *ctx.inputs[0].as<float>(), bc1 = *ctx.inputs[1].as<float>(), bc2 = *ctx.inputs[2].as<float>();
    const float *p = ctx.inputs[3].as<float>(), *g = ctx.inputs[4].as<float>();
    const float *m = ctx.inputs[5].as<float>(), *v = ctx.inputs[6].as<float>();
    float *po = ctx.outputs[0].as<float>(), *mo = ctx.outputs[1].as<float>(), *vo = ctx.outputs[2].as<float>();
    float scale = ctx.inputs.size() > 7 ? *ctx.inputs[7].as<float>() : 1.0f;
    float decay = 1.0f - lr * wd_, step = lr / bc1, invRootBc2 = 1.0f / std::sqrt(bc2);
    float b1 = b1_, b2 = b2_, eps = eps_;
    parallelFor(ctx.inputs[3].numel(), 1 << 15, [&](int64_t s, int64_t e) {
      for (int64_t i = s; i < e; ++i) {
        float gi = scale * g[i];
        float mi = b1 * m[i] + (1.0f - b1) * gi;
        float vi = b2 * v[i] + (1.0f - b2) * gi * gi;
        mo[i] = mi;
        vo[i] = vi;
        po[i] = p[i] * decay - step * mi / (std::sqrt(vi) * invRootBc2 + eps);
      }
    });
    return llvm::Error::success();
  }

private:
  float b1_, b2_, eps_, wd_;
};
} // namespace

void registerOptimizerKernels(KernelRegistry &r) {
  r.add("partita.AdamW", kCpuDevice, [](const Node &n) -> llvm::Expected<std::unique_ptr<Kernel>> {
    if (!allOfType(n, DType::F32))
      return makeFallbackKernel(n);
    return std::unique_ptr<Kernel>(new AdamWKernel(n));
  });
}

} // namespace partita::rt::cpu
