//===- ReductionOps.cpp - ReduceMean/Sum/Max/Min/Prod, CumSum -------------===//
#include "compiler/ops/Broadcast.h"
#include "compiler/ops/OpRegistry.h"
#include <cmath>
#include <limits>

namespace partita {

namespace {

using Result = llvm::Expected<std::vector<Tensor>>;

/// Reduced axes. Opsets 13-17 pass them as an attribute, except ReduceSum
/// (an input since opset 13); opset 18 moved all of them to an input.
llvm::Expected<std::vector<bool>> reducedAxes(const Node &n, const Tensor *axesInput,
                                              bool hasAxesInput, int64_t rank) {
  std::vector<int64_t> axes = hasAxesInput ? (axesInput ? axesInput->toInts() : std::vector<int64_t>{})
                                           : n.intsAttr("axes");
  if (hasAxesInput && !axesInput)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "node " + n.describe() + ": axes are not a compile-time constant");
  std::vector<bool> reduce(rank, axes.empty() && !n.intAttr("noop_with_empty_axes", 0));
  for (int64_t a : axes) {
    int64_t ax = normalizeAxis(a, rank);
    if (ax < 0)
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "node " + n.describe() + ": axis " + llvm::Twine(a) +
                                         " out of range for rank " + llvm::Twine(rank));
    reduce[ax] = true;
  }
  return reduce;
}

Shape reducedShape(const Shape &in, const std::vector<bool> &reduce, bool keep) {
  Shape out;
  for (size_t i = 0; i < in.size(); ++i)
    if (!reduce[i])
      out.push_back(in[i]);
    else if (keep)
      out.push_back(1);
  return out;
}

enum class Reduction { Sum, Mean, Max, Min, Prod };

OpInfo reduceOp(Reduction kind) {
  auto infer = [](const InferContext &c, std::vector<TensorType> &o) -> llvm::Error {
    auto reduce = reducedAxes(c.node, c.value(1), c.has(1), c.type(0).rank());
    if (!reduce)
      return reduce.takeError();
    bool keep = c.node.intAttr("keepdims", 1) != 0;
    o.push_back(TensorType{c.type(0).dtype, reducedShape(c.type(0).shape, *reduce, keep), true});
    return llvm::Error::success();
  };
  auto eval = [kind](const Node &n, llvm::ArrayRef<Tensor> in) -> Result {
    const Shape &s = in[0].shape();
    auto reduce = reducedAxes(n, in.size() > 1 ? &in[1] : nullptr, in.size() > 1,
                              static_cast<int64_t>(s.size()));
    if (!reduce)
      return reduce.takeError();
    Shape kept = reducedShape(s, *reduce, true);
    int64_t outN = numElements(kept);
    double init = kind == Reduction::Max   ? -std::numeric_limits<double>::infinity()
                  : kind == Reduction::Min ? std::numeric_limits<double>::infinity()
                  : kind == Reduction::Prod ? 1.0
                                            : 0.0;
    std::vector<double> acc(static_cast<size_t>(outN), init);
    BroadcastIndexer toOut(kept, s);
    for (int64_t i = 0; i < in[0].numel(); ++i) {
      double &a = acc[toOut(i)];
      double v = in[0].at(i);
      switch (kind) {
      case Reduction::Sum:
      case Reduction::Mean: a += v; break;
      case Reduction::Max: a = std::max(a, v); break;
      case Reduction::Min: a = std::min(a, v); break;
      case Reduction::Prod: a *= v; break;
      }
    }
    if (kind == Reduction::Mean && outN)
      for (double &a : acc)
        a /= static_cast<double>(in[0].numel() / outN);
    bool keep = n.intAttr("keepdims", 1) != 0;
    return std::vector<Tensor>{Tensor::fromDoubles(in[0].dtype(), reducedShape(s, *reduce, keep), acc)};
  };
  return OpInfo{infer, eval, 1, 2};
}

Result evalCumSum(const Node &n, llvm::ArrayRef<Tensor> in) {
  const Shape &s = in[0].shape();
  int64_t axis = normalizeAxis(in[1].intAt(0), static_cast<int64_t>(s.size()));
  bool exclusive = n.intAttr("exclusive", 0), reverse = n.intAttr("reverse", 0);
  int64_t inner = numElements(llvm::ArrayRef<int64_t>(s).drop_front(axis + 1));
  int64_t dim = s[axis], outer = in[0].numel() / std::max<int64_t>(1, dim * inner);
  std::vector<double> v = in[0].toDoubles(), out(v.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t r = 0; r < inner; ++r) {
      double acc = 0;
      for (int64_t k = 0; k < dim; ++k) {
        int64_t j = reverse ? dim - 1 - k : k;
        int64_t idx = (o * dim + j) * inner + r;
        if (exclusive) {
          out[idx] = acc;
          acc += v[idx];
        } else {
          acc += v[idx];
          out[idx] = acc;
        }
      }
    }
  return std::vector<Tensor>{Tensor::fromDoubles(in[0].dtype(), s, out)};
}

} // namespace

void registerReductionOps(OpRegistry &r) {
  r.add("ReduceSum", reduceOp(Reduction::Sum));
  r.add("ReduceMean", reduceOp(Reduction::Mean));
  r.add("ReduceMax", reduceOp(Reduction::Max));
  r.add("ReduceMin", reduceOp(Reduction::Min));
  r.add("ReduceProd", reduceOp(Reduction::Prod));
  r.add("CumSum", OpInfo{[](const InferContext &c, std::vector<TensorType> &o) -> llvm::Error {
                           if (!c.value(1))
                             return c.error("axis is not a compile-time constant");
                           if (normalizeAxis(c.value(1)->intAt(0), c.type(0).rank()) < 0)
                             return c.error("axis out of range");
                           o.push_back(c.type(0));
                           return llvm::Error::success();
                         },
                         evalCumSum, 2, 2});
}

} // namespace partita
