//===- LinearAlgebraGrads.cpp - MatMul and partita.Linear -----------------===//
//
// dA = dY·Bᵀ and dB = Aᵀ·dY, summed over broadcast batch dims. For Linear the
// weight gradient contracts every leading dim of x: dW = x₂ᵀ·dY₂ with x and dY
// flattened to 2-D, and db sums dY over all but its last dim.
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
  t["partita.Linear"] = [](GradBuilder &b, const Node &n, llvm::ArrayRef<Value *> d, std::vector<Value *> &dIn) -> llvm::Error {
    Value *x = n.input(0), *w = n.input(1);
    dIn[0] = b.op("MatMul", {d[0], b.transposeLast(w)});
    dIn[1] = b.op("MatMul", {b.transposeLast(flatten2d(b, x)), flatten2d(b, d[0])});
    dIn[2] = b.sumTo(d[0], n.input(2)->type().shape);
    return llvm::Error::success();
  };
}

} // namespace partita
