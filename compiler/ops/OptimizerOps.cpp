//===- OptimizerOps.cpp - partita.AdamW -----------------------------------===//
//
// partita.AdamW(lr, bc1, bc2, p, g, m, v[, s]) {beta1, beta2, epsilon, weight_decay}
//   -> (p', m', v'), torch.optim.AdamW's update of one tensor with gradient
//   s·g (s: a scalar, 1 when omitted; the mean over micro-batches and the
//   clip coefficient, applied in the same pass):
//   p ← p·(1 − lr·wd);  m ← β1·m + (1−β1)·g;  v ← β2·v + (1−β2)·g²
//   p ← p − (lr / bc1) · m / (√v / √bc2 + ε)
// One op per parameter so a runtime can fuse the update into a single pass
// over memory (the optimizer step is memory-bound).
//===----------------------------------------------------------------------===//
#include "compiler/ops/OpRegistry.h"
#include <cmath>

namespace partita {

void registerOptimizerOps(OpRegistry &r) {
  r.add("partita.AdamW",
        OpInfo{[](const InferContext &c, std::vector<TensorType> &o) -> llvm::Error {
                 for (size_t i = 0; i < 3; ++i)
                   if (c.type(i).numel() != 1)
                     return c.error("lr, bc1 and bc2 must be scalars");
                 for (size_t i = 4; i < 7; ++i)
                   if (c.type(i) != c.type(3))
                     return c.error("parameter, gradient and moments must have the same type");
                 if (c.has(7) && c.type(7).numel() != 1)
                   return c.error("the gradient scale must be a scalar");
                 o.assign(3, c.type(3));
                 return llvm::Error::success();
               },
               [](const Node &n, llvm::ArrayRef<Tensor> in) -> llvm::Expected<std::vector<Tensor>> {
                 double lr = in[0].at(0), bc1 = in[1].at(0), bc2 = in[2].at(0);
                 double b1 = n.floatAttr("beta1", 0.9), b2 = n.floatAttr("beta2", 0.999);
                 double eps = n.floatAttr("epsilon", 1e-8), wd = n.floatAttr("weight_decay", 0.01);
                 double s = in.size() > 7 ? in[7].at(0) : 1.0;
                 std::vector<double> p = in[3].toDoubles(), g = in[4].toDoubles(), m = in[5].toDoubles(),
                                     v = in[6].toDoubles();
                 for (size_t i = 0; i < p.size(); ++i) {
                   g[i] *= s;
                   m[i] = b1 * m[i] + (1 - b1) * g[i];
                   v[i] = b2 * v[i] + (1 - b2) * g[i] * g[i];
                   p[i] = p[i] * (1 - lr * wd) - (lr / bc1) * m[i] / (std::sqrt(v[i]) / std::sqrt(bc2) + eps);
                 }
                 DType t = in[3].dtype();
                 return std::vector<Tensor>{Tensor::fromDoubles(t, in[3].shape(), p),
                                            Tensor::fromDoubles(t, in[3].shape(), m),
                                            Tensor::fromDoubles(t, in[3].shape(), v)};
               },
               7, 8})
      .exportedAs(OnnxForm::Custom);
}

} // namespace partita
