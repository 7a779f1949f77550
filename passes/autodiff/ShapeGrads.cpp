//===- ShapeGrads.cpp - data movement: reshape, transpose, split, concat, slice, gather --===//
#include "compiler/ops/OpRegistry.h"
#include "passes/autodiff/GradBuilder.h"

namespace partita {

namespace {

/// Zero-pads `g` along `axis` to `full` elements, `g` starting at `begin`.
Value *padAlong(GradBuilder &b, Value *g, int64_t axis, int64_t begin, int64_t full) {
  std::vector<Value *> parts;
  TensorType t = g->type();
  int64_t len = t.shape[axis];
  if (begin > 0) {
    TensorType z = t;
    z.shape[axis] = begin;
    parts.push_back(b.zeros(z));
  }
  parts.push_back(g);
  if (full - begin - len > 0) {
    TensorType z = t;
    z.shape[axis] = full - begin - len;
    parts.push_back(b.zeros(z));
  }
  return parts.size() == 1 ? g : b.op("Concat", parts, {{"axis", Attribute::ofInt(axis)}});
}

} // namespace

void addShapeGrads(std::map<std::string, GradFn> &t) {
  auto reshapeBack = [](GradBuilder &b, const Node &n, llvm::ArrayRef<Value *> d, std::vector<Value *> &dIn) -> llvm::Error {
    dIn[0] = b.reshape(d[0], n.input(0)->type().shape);
    return llvm::Error::success();
  };
  for (const char *op : {"Reshape", "Flatten", "Squeeze", "Unsqueeze"})
    t[op] = reshapeBack;
  t["Transpose"] = [](GradBuilder &b, const Node &n, llvm::ArrayRef<Value *> d, std::vector<Value *> &dIn) -> llvm::Error {
    std::vector<int64_t> perm = transposePerm(n);
    std::vector<int64_t> inv(perm.size());
    for (size_t i = 0; i < perm.size(); ++i)
      inv[perm[i]] = static_cast<int64_t>(i);
    dIn[0] = b.op("Transpose", {d[0]}, {{"perm", Attribute::ofInts(inv)}});
    return llvm::Error::success();
  };
  t["Expand"] = [](GradBuilder &b, const Node &n, llvm::ArrayRef<Value *> d, std::vector<Value *> &dIn) -> llvm::Error {
    dIn[0] = b.sumTo(d[0], n.input(0)->type().shape);
    return llvm::Error::success();
  };
  t["Split"] = [](GradBuilder &b, const Node &n, llvm::ArrayRef<Value *> d, std::vector<Value *> &dIn) -> llvm::Error {
    std::vector<Value *> parts;
    for (size_t i = 0; i < n.numOutputs(); ++i)
      parts.push_back(d[i] ? d[i] : b.zeros(n.output(i)->type()));
    dIn[0] = b.op("Concat", parts, {{"axis", Attribute::ofInt(n.intAttr("axis", 0))}});
    return llvm::Error::success();
  };
  t["Concat"] = [](GradBuilder &b, const Node &n, llvm::ArrayRef<Value *> d, std::vector<Value *> &dIn) -> llvm::Error {
    int64_t axis = normalizeAxis(n.intAttr("axis", 0), n.output()->type().rank()), offset = 0;
    for (size_t i = 0; i < n.numInputs(); ++i) {
      int64_t len = n.input(i)->type().shape[axis];
      dIn[i] = b.op("Slice", {d[0], b.ints({offset}), b.ints({offset + len}), b.ints({axis})});
      offset += len;
    }
    return llvm::Error::success();
  };
  t["Slice"] = [](GradBuilder &b, const Node &n, llvm::ArrayRef<Value *> d, std::vector<Value *> &dIn) -> llvm::Error {
    const Tensor *starts = constantValue(n.input(1));
    const Tensor *axesT = n.input(3) ? constantValue(n.input(3)) : nullptr;
    const Tensor *steps = n.input(4) ? constantValue(n.input(4)) : nullptr;
    const Shape &in = n.input(0)->type().shape;
    if (!starts || (n.input(3) && !axesT))
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "autodiff: node " + n.describe() + ": slice bounds must be constants");
    Value *g = d[0];
    for (int64_t k = 0; k < starts->numel(); ++k) {
      int64_t axis = axesT ? normalizeAxis(axesT->intAt(k), static_cast<int64_t>(in.size())) : k;
      if (steps && steps->intAt(k) != 1)
        return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                       "autodiff: node " + n.describe() + ": only unit slice steps are supported");
      int64_t begin = starts->intAt(k);
      if (begin < 0)
        begin += in[axis];
      begin = std::clamp<int64_t>(begin, 0, in[axis]);
      g = padAlong(b, g, axis, begin, in[axis]);
    }
    dIn[0] = g;
    return llvm::Error::success();
  };
  // Embedding lookup (rows of a 2-D table): dW[ids[i]] += dY[i], a
  // scatter-add (partita.EmbeddingGrad). Any other gather, e.g. a ViT's class
  // token x[:, 0], along axis a of data [P.., N, Q..] with K indices:
  // dX[p, n, q] = sum_k dY[p, k, q] · (idx[k] == n), a one-hot matmul.
  t["Gather"] = [](GradBuilder &b, const Node &n, llvm::ArrayRef<Value *> d, std::vector<Value *> &dIn) -> llvm::Error {
    Value *w = n.input(0), *ids = n.input(1);
    const Shape &ds = w->type().shape;
    int64_t rank = w->type().rank(), axis = normalizeAxis(n.intAttr("axis", 0), rank);
    if (axis == 0 && rank == 2) {
      dIn[0] = b.op("EmbeddingGrad", {w, ids, d[0]}, {{"offset", Attribute::ofInt(0)}}, "partita");
      return llvm::Error::success();
    }
    int64_t rows = ds[axis], count = ids->type().numel(), outer = 1, inner = 1;
    for (int64_t i = 0; i < rank; ++i)
      (i < axis ? outer : inner) *= i == axis ? 1 : ds[i];
    DType it = ids->type().dtype;
    std::vector<int64_t> range(static_cast<size_t>(rows));
    for (int64_t i = 0; i < rows; ++i)
      range[i] = i;
    Value *classes = b.graph().createConstant(Tensor::fromInts(it, {1, rows}, range), "grad.rows");
    Value *flat = b.reshape(ids, {count, 1});
    Value *zero = b.graph().createConstant(Tensor::fromInts(it, {}, {0}), "grad.zero");
    Value *wrapped = b.op("Where", {b.op("Less", {flat, zero}),
                                    b.op("Add", {flat, b.graph().createConstant(Tensor::fromInts(it, {}, {rows}),
                                                                                "grad.count")}),
                                    flat}); // negative indices count from the end
    Value *onehot = b.op("Cast", {b.op("Equal", {wrapped, classes})},
                         {{"to", Attribute::ofInt(dtypeToOnnx(w->type().dtype))}}); // [K, N]
    Value *dx = b.op("MatMul", {b.transposeLast(onehot), b.reshape(d[0], {outer, count, inner})}); // [P, N, Q]
    dIn[0] = b.reshape(dx, ds);
    return llvm::Error::success();
  };
}

} // namespace partita
