//===- LinearAlgebraGrads.cpp - MatMul, partita.Linear, patch Conv --------===//
//
// dA = dY·Bᵀ and dB = Aᵀ·dY, summed over broadcast batch dims. For Linear the
// weight gradient contracts every leading dim of x: dW = x₂ᵀ·dY₂ with x and dY
// flattened to 2-D, and db sums dY over all but its last dim.
//
// A Conv whose stride equals its kernel (no padding, dilation 1, one group:
// a ViT's patch embedding) is a matmul of non-overlapping patches,
// Y[n, o, h, w] = sum_c,i,j X[n, c, h·kh + i, w·kw + j] · W[o, c, i, j] + b[o];
// its gradients are the matmul's, with patches cut and put back by
// Reshape/Transpose. Other convolutions have no rule yet.
//===----------------------------------------------------------------------===//
#include "passes/autodiff/GradBuilder.h"

namespace partita {

namespace {
llvm::Error vectorOperands(const Node &n) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 "autodiff: node " + n.describe() + ": 1-D matmul operands are not supported");
}

/// [.., K] -> [M, K].
Value *flatten2d(GradBuilder &b, Value *v) {
  int64_t k = v->type().shape.back();
  return b.reshape(v, {v->type().numel() / std::max<int64_t>(k, 1), k});
}
} // namespace

void addLinearAlgebraGrads(std::map<std::string, GradFn> &t) {
  t["MatMul"] = [](GradBuilder &b, const Node &n, llvm::ArrayRef<Value *> d, std::vector<Value *> &dIn) -> llvm::Error {
    Value *a = n.input(0), *w = n.input(1);
    if (a->type().rank() < 2 || w->type().rank() < 2)
      return vectorOperands(n);
    dIn[0] = b.sumTo(b.op("MatMul", {d[0], b.transposeLast(w)}), a->type().shape);
    if (w->type().rank() == 2 && a->type().rank() > 2)
      dIn[1] = b.op("MatMul", {b.transposeLast(flatten2d(b, a)), flatten2d(b, d[0])});
    else
      dIn[1] = b.sumTo(b.op("MatMul", {b.transposeLast(a), d[0]}), w->type().shape);
    return llvm::Error::success();
  };
  t["Conv"] = [](GradBuilder &b, const Node &n, llvm::ArrayRef<Value *> d, std::vector<Value *> &dIn) -> llvm::Error {
    Value *x = n.input(0), *w = n.input(1);
    const Shape &xs = x->type().shape, &ws = w->type().shape;
    std::vector<int64_t> strides = n.intsAttr("strides"), pads = n.intsAttr("pads"), dil = n.intsAttr("dilations");
    bool patches = xs.size() == 4 && n.intAttr("group", 1) == 1 && n.stringAttr("auto_pad", "NOTSET") != "SAME_UPPER" &&
                   n.stringAttr("auto_pad", "NOTSET") != "SAME_LOWER" && strides.size() == 2 && strides[0] == ws[2] &&
                   strides[1] == ws[3] && xs[2] % ws[2] == 0 && xs[3] % ws[3] == 0;
    for (int64_t p : pads)
      patches &= p == 0;
    for (int64_t v : dil)
      patches &= v == 1;
    if (!patches)
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "autodiff: node " + n.describe() +
                                         ": only non-overlapping patch convolutions (2-D, stride = kernel, no "
                                         "padding, dilation 1, one group) have a gradient rule");
    int64_t N = xs[0], C = xs[1], O = ws[0], kh = ws[2], kw = ws[3], H = xs[2] / kh, W = xs[3] / kw;
    int64_t M = N * H * W, CK = C * kh * kw;
    auto perm = [](std::vector<int64_t> p) { return std::map<std::string, Attribute>{{"perm", Attribute::ofInts(p)}}; };
    // dY [N, O, H, W] -> [N·H·W, O]
    Value *dy2 = b.reshape(b.op("Transpose", {d[0]}, perm({0, 2, 3, 1})), {M, O});
    Value *w2 = b.reshape(w, {O, CK});
    // patches of x: [N, C, H, kh, W, kw] -> [N, H, W, C, kh, kw] -> [N·H·W, C·kh·kw]
    Value *x2 = b.reshape(b.op("Transpose", {b.reshape(x, {N, C, H, kh, W, kw})}, perm({0, 2, 4, 1, 3, 5})), {M, CK});
    dIn[1] = b.reshape(b.op("MatMul", {b.transposeLast(dy2), x2}), ws);
    if (n.input(2))
      dIn[2] = b.reshape(b.op("ReduceSum", {dy2, b.ints({0})}, {{"keepdims", Attribute::ofInt(0)}}),
                         n.input(2)->type().shape);
    Value *dx2 = b.op("MatMul", {dy2, w2}); // [N·H·W, C·kh·kw]
    dIn[0] = b.reshape(b.op("Transpose", {b.reshape(dx2, {N, H, W, C, kh, kw})}, perm({0, 3, 1, 4, 2, 5})), xs);
    return llvm::Error::success();
  };
  t["partita.Linear"] = [](GradBuilder &b, const Node &n, llvm::ArrayRef<Value *> d, std::vector<Value *> &dIn) -> llvm::Error {
    Value *x = n.input(0), *w = n.input(1);
    dIn[0] = b.op("MatMul", {d[0], b.transposeLast(w)});
    dIn[1] = b.op("MatMul", {b.transposeLast(flatten2d(b, x)), flatten2d(b, d[0])});
    dIn[2] = b.sumTo(d[0], n.input(2)->type().shape);
    return llvm::Error::success();
  };
}

} // namespace partita
