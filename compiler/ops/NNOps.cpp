//===- NNOps.cpp - MatMul, Gemm, Linear, Softmax, LayerNormalization, Trilu -===//
#include "compiler/ops/Broadcast.h"
#include "compiler/ops/OpRegistry.h"
#include <cmath>

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
  if (normalizeAxis(c.node.intAttr("axis", -1), c.type(0).rank()) < 0)
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

// ---- reference evaluators (double precision; folding and gradient checks) ----

/// numpy.matmul on doubles; `transB` reads b as its transpose (2-D b only).
Tensor matmulRef(const Tensor &a, const Tensor &b, DType outType, bool transB = false) {
  Shape as = a.shape(), bs = b.shape();
  if (transB)
    std::swap(bs[0], bs[1]);
  bool aVec = as.size() == 1, bVec = bs.size() == 1;
  if (aVec)
    as.insert(as.begin(), 1);
  if (bVec)
    bs.push_back(1);
  int64_t m = as[as.size() - 2], k = as.back(), n = bs.back();
  Shape batch = *broadcastShapes({Shape(as.begin(), as.end() - 2), Shape(bs.begin(), bs.end() - 2)});
  Shape aBatch(as.begin(), as.end() - 2), bBatch(bs.begin(), bs.end() - 2);
  BroadcastIndexer ia(aBatch, batch), ib(bBatch, batch);
  std::vector<double> av = a.toDoubles(), bv = b.toDoubles();
  int64_t nb = numElements(batch);
  std::vector<double> out(static_cast<size_t>(nb * m * n), 0.0);
  for (int64_t t = 0; t < nb; ++t) {
    const double *pa = av.data() + ia(t) * m * k;
    const double *pb = bv.data() + ib(t) * k * n;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double acc = 0;
        for (int64_t q = 0; q < k; ++q)
          acc += pa[i * k + q] * (transB ? pb[j * k + q] : pb[q * n + j]);
        out[(t * m + i) * n + j] = acc;
      }
  }
  Shape outShape = batch;
  if (!aVec)
    outShape.push_back(m);
  if (!bVec)
    outShape.push_back(n);
  return Tensor::fromDoubles(outType, outShape, out);
}

using Result = llvm::Expected<std::vector<Tensor>>;

Result evalMatMul(const Node &, llvm::ArrayRef<Tensor> in) {
  return std::vector<Tensor>{matmulRef(in[0], in[1], in[0].dtype())};
}

Result evalLinear(const Node &, llvm::ArrayRef<Tensor> in) {
  Tensor y = matmulRef(in[0], in[1], DType::F64);
  std::vector<double> v = y.toDoubles(), b = in[2].toDoubles();
  for (size_t i = 0; i < v.size(); ++i)
    v[i] += b[i % b.size()];
  return std::vector<Tensor>{Tensor::fromDoubles(in[0].dtype(), y.shape(), v)};
}

Result evalSoftmax(const Node &n, llvm::ArrayRef<Tensor> in) {
  const Shape &s = in[0].shape();
  int64_t axis = normalizeAxis(n.intAttr("axis", -1), static_cast<int64_t>(s.size()));
  int64_t len = s[axis], inner = numElements(llvm::ArrayRef<int64_t>(s).drop_front(axis + 1));
  int64_t outer = in[0].numel() / std::max<int64_t>(1, len * inner);
  std::vector<double> x = in[0].toDoubles(), y(x.size());
  bool log = n.is("LogSoftmax");
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      auto at = [&](int64_t k) { return (o * len + k) * inner + i; };
      double mx = -INFINITY, sum = 0;
      for (int64_t k = 0; k < len; ++k)
        mx = std::max(mx, x[at(k)]);
      for (int64_t k = 0; k < len; ++k)
        sum += std::exp(x[at(k)] - mx);
      for (int64_t k = 0; k < len; ++k)
        y[at(k)] = log ? x[at(k)] - mx - std::log(sum) : std::exp(x[at(k)] - mx) / sum;
    }
  return std::vector<Tensor>{Tensor::fromDoubles(in[0].dtype(), s, y)};
}

Result evalLayerNorm(const Node &n, llvm::ArrayRef<Tensor> in) {
  const Shape &s = in[0].shape();
  int64_t axis = normalizeAxis(n.intAttr("axis", -1), static_cast<int64_t>(s.size()));
  int64_t len = numElements(llvm::ArrayRef<int64_t>(s).drop_front(axis)), rows = in[0].numel() / len;
  double eps = n.floatAttr("epsilon", 1e-5);
  std::vector<double> x = in[0].toDoubles(), g = in[1].toDoubles(), y(x.size()), mean(rows), rstd(rows);
  std::vector<double> b = in.size() > 2 ? in[2].toDoubles() : std::vector<double>();
  for (int64_t r = 0; r < rows; ++r) {
    double m = 0, v = 0;
    for (int64_t i = 0; i < len; ++i)
      m += x[r * len + i];
    m /= len;
    for (int64_t i = 0; i < len; ++i)
      v += (x[r * len + i] - m) * (x[r * len + i] - m);
    double rs = 1.0 / std::sqrt(v / len + eps);
    for (int64_t i = 0; i < len; ++i)
      y[r * len + i] = (x[r * len + i] - m) * rs * g[i % g.size()] + (b.empty() ? 0.0 : b[i % b.size()]);
    mean[r] = m;
    rstd[r] = rs;
  }
  Shape stats = s;
  for (size_t d = axis; d < stats.size(); ++d)
    stats[d] = 1;
  return std::vector<Tensor>{Tensor::fromDoubles(in[0].dtype(), s, y), Tensor::fromDoubles(DType::F32, stats, mean),
                             Tensor::fromDoubles(DType::F32, stats, rstd)};
}

} // namespace

void registerNNOps(OpRegistry &r) {
  r.add("MatMul", OpInfo{inferMatMul, evalMatMul, 2, 2}).with(OpTrait::Contraction);
  r.add("Gemm", OpInfo{inferGemm, {}, 2, 3}).with(OpTrait::Contraction);
  r.add("partita.Linear", OpInfo{inferLinear, evalLinear, 3, 3})
      .with(OpTrait::Contraction)
      .exportedAs(OnnxForm::Function);
  r.add("Softmax", OpInfo{inferAxisOp, evalSoftmax, 1, 1});
  r.add("LogSoftmax", OpInfo{inferAxisOp, evalSoftmax, 1, 1});
  r.add("LayerNormalization", OpInfo{inferLayerNorm, evalLayerNorm, 2, 3}).with(OpTrait::Normalizes);
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
