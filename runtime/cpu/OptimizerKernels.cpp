//===- OptimizerKernels.cpp - partita.AdamW in one pass over memory (f32) --===//
#include "runtime/cpu/CpuKernels.h"
#include "runtime/cpu/Parallel.h"
#include "runtime/kernels/ElementMath.h"
#include "runtime/kernels/NodeShapes.h"

namespace partita::rt::cpu {

namespace {
class AdamWKernel final : public Kernel {
public:
  explicit AdamWKernel(const Node &n) : c_(n) {}

  llvm::Error run(KernelContext &ctx) override {
    float lr = *ctx.inputs[0].as<float>(), bc1 = *ctx.inputs[1].as<float>(), bc2 = *ctx.inputs[2].as<float>();
    const float *p = ctx.inputs[3].as<float>(), *g = ctx.inputs[4].as<float>();
    const float *m = ctx.inputs[5].as<float>(), *v = ctx.inputs[6].as<float>();
    float *po = ctx.outputs[0].as<float>(), *mo = ctx.outputs[1].as<float>(), *vo = ctx.outputs[2].as<float>();
    float scale = ctx.inputs.size() > 7 ? *ctx.inputs[7].as<float>() : 1.0f;
    AdamWStep step = adamwStep(lr, bc1, bc2, c_.beta1, c_.beta2, c_.epsilon, c_.weightDecay, scale);
    parallelFor(ctx.inputs[3].numel(), 1 << 15, [&](int64_t b, int64_t e) {
      const AdamWStep s = step; // a local copy: no store below can alias it, so the loop vectorizes
      for (int64_t i = b; i < e; ++i) {
        float mi = m[i], vi = v[i];
        po[i] = adamwUpdate(s, p[i], g[i], mi, vi);
        mo[i] = mi;
        vo[i] = vi;
      }
    });
    return llvm::Error::success();
  }

private:
  AdamWConstants c_;
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
