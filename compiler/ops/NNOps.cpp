//===- NNOps.cpp - MatMul, Gemm, Linear, Softmax, LayerNormalization, Trilu -===//
#include "compiler/ops/Broadcast.h"
#include "compiler/ops/OpRegistry.h"

namespace partita {

namespace {

using Result = llvm::Expected<std::vector<Tensor>>;

/// numpy.matmul shape rule: 1-D operands are promoted, batch dims broadcast.
llvm::Error inferMatMul(const InferContext &c, std::vector<TensorType> &o) {
  Shape a = c.type(0).shape, b = c.type(1).shape;
  if (a.empty() || b.empty())
    return c.error("operands must have rank >= 1");
  if (c.type(0).dtype != c.type(1).dtype)
    return c.error("operand types differ");
  bool aVec = a.size() == 1, bVec = b.size() == 1;
  if (aVec)
    a.insert(a.begin(), 1);
  if (bVec)
    b.push_back(1);
  if (a.back() != b[b.size() - 2])
    return c.error("inner dimensions differ: " + shapeString(c.type(0).shape) + " x " +
                   shapeString(c.type(1).shape));
  auto batch = broadcastShapes({Shape(a.begin(), a.end() - 2), Shape(b.begin(), b.end() - 2)});
  if (!batch)
    return c.error("batch dimensions do not broadcast");
  Shape out = *batch;
  if (!aVec)
    out.push_back(a[a.size() - 2]);
  if (!bVec)
    out.push_back(b.back());
  o.push_back(TensorType{c.type(0).dtype, out, true});
  return llvm::Error::success();
}

/// partita.Linear(x, w[, b]) {trans_b}: y = x @ (trans_b ? wᵀ : w) + b, w 2-D.
llvm::Error inferLinear(const InferContext &c, std::vector<TensorType> &o) {
  const Shape &x = c.type(0).shape, &w = c.type(1).shape;
  if (w.size() != 2 || x.empty())
    return c.error("expects a 2-D weight and an input of rank >= 1");
  bool transB = c.node.intAttr("trans_b", 0) != 0;
  int64_t k = transB ? w[1] : w[0], n = transB ? w[0] : w[1];
  if (x.back() != k)
    return c.error("input features " + llvm::Twine(x.back()) + " differ from weight " +
                   shapeString(w) + (transB ? " (transposed)" : ""));
  if (c.has(2) && !(c.type(2).shape.size() == 1 && c.type(2).shape[0] == n))
    return c.error("bias shape " + shapeString(c.type(2).shape) + " is not [" + llvm::Twine(n) + "]");
  Shape out = x;
  out.back() = n;
  o.push_back(TensorType{c.type(0).dtype, out, true});
  return llvm::Error::success();
}

llvm::Error inferGemm(const InferContext &c, std::vector<TensorType> &o) {
  const Shape &a = c.type(0).shape, &b = c.type(1).shape;
  if (a.size() != 2 || b.size() != 2)
    return c.error("operands must be 2-D");
  bool ta = c.node.intAttr("transA", 0), tb = c.node.intAttr("transB", 0);
  int64_t m = ta ? a[1] : a[0], k = ta ? a[0] : a[1];
  int64_t kb = tb ? b[1] : b[0], n = tb ? b[0] : b[1];
  if (k != kb)
    return c.error("inner dimensions differ");
  if (c.has(2) && !broadcastShapes({c.type(2).shape, Shape{m, n}}))
    return c.error("C does not broadcast to [" + llvm::Twine(m) + "," + llvm::Twine(n) + "]");
  o.push_back(TensorType{c.type(0).dtype, {m, n}, true});
  return llvm::Error::success();
}

llvm::Error inferAxisOp(const InferContext &c, std::vector<TensorType> &o) {
  int64_t dflt = c.node.is("LayerNormalization") ? -1 : -1;
  if (normalizeAxis(c.node.intAttr("axis", dflt), c.type(0).rank()) < 0)
    return c.error("axis out of range for rank " + llvm::Twine(c.type(0).rank()));
  o.push_back(c.type(0));
  return llvm::Error::success();
}

llvm::Error inferLayerNorm(const InferContext &c, std::vector<TensorType> &o) {
  if (auto err = inferAxisOp(c, o))
    return err;
  int64_t axis = normalizeAxis(c.node.intAttr("axis", -1), c.type(0).rank());
  Shape norm(c.type(0).shape.begin() + axis, c.type(0).shape.end());
  for (size_t i = 1; i < 3; ++i)
    if (c.has(i) && !broadcastShapes({c.type(i).shape, norm}))
      return c.error("scale/bias shape " + shapeString(c.type(i).shape) +
                     " does not broadcast to the normalized shape " + shapeString(norm));
  Shape stats = c.type(0).shape;
  for (size_t d = axis; d < stats.size(); ++d)
    stats[d] = 1;
  DType statType = static_cast<int>(c.node.intAttr("stash_type", 1)) == 1 ? DType::F32 : c.type(0).dtype;
  o.push_back(TensorType{statType, stats, true});
  o.push_back(TensorType{statType, stats, true});
  return llvm::Error::success();
}

Result evalTrilu(const Node &n, llvm::ArrayRef<Tensor> in) {
  const Shape &s = in[0].shape();
  int64_t k = in.size() > 1 ? in[1].intAt(0) : 0;
  bool upper = n.intAttr("upper", 1) != 0;
  int64_t rows = s[s.size() - 2], cols = s.back();
  std::vector<double> v = in[0].toDoubles();
  for (int64_t i = 0; i < static_cast<int64_t>(v.size()); ++i) {
    int64_t c = i % cols, r = (i / cols) % rows;
    bool keep = upper ? (c - r >= k) : (c - r <= k);
    if (!keep)
      v[i] = 0;
  }
  return std::vector<Tensor>{Tensor::fromDoubles(in[0].dtype(), s, v)};
}

} // namespace

void registerNNOps(OpRegistry &r) {
  r.add("MatMul", OpInfo{inferMatMul, {}, 2, 2});
  r.add("Gemm", OpInfo{inferGemm, {}, 2, 3});
  r.add("partita.Linear", OpInfo{inferLinear, {}, 2, 3});
  r.add("Softmax", OpInfo{inferAxisOp, {}, 1, 1});
  r.add("LogSoftmax", OpInfo{inferAxisOp, {}, 1, 1});
  r.add("LayerNormalization", OpInfo{inferLayerNorm, {}, 2, 3});
  r.add("Trilu", OpInfo{[](const InferContext &c, std::vector<TensorType> &o) -> llvm::Error {
                          if (c.type(0).rank() < 2)
                            return c.error("input must have rank >= 2");
                          if (c.has(1) && !c.value(1))
                            return c.error("k is not a compile-time constant");
                          o.push_back(c.type(0));
                          return llvm::Error::success();
                        },
                        evalTrilu, 1, 2});
}

} // namespace partita
