//===- NormGrads.cpp - Softmax, LogSoftmax, LayerNormalization, reductions --===//
#include "compiler/ops/OpRegistry.h"
#include "passes/autodiff/GradBuilder.h"

namespace partita {

namespace {
std::map<std::string, Attribute> keep() { return {{"keepdims", Attribute::ofInt(1)}}; }
} // namespace

void addNormGrads(std::map<std::string, GradFn> &t) {
  t["Softmax"] = [](GradBuilder &b, const Node &n, llvm::ArrayRef<Value *> d, std::vector<Value *> &dIn) -> llvm::Error {
    // dx = y * (dy - sum(dy * y))
    Value *y = n.output();
    int64_t axis = normalizeAxis(n.intAttr("axis", -1), y->type().rank());
    Value *s = b.op("ReduceSum", {b.op("Mul", {d[0], y}), b.ints({axis})}, keep());
    dIn[0] = b.op("Mul", {y, b.op("Sub", {d[0], s})});
    return llvm::Error::success();
  };
  t["LogSoftmax"] = [](GradBuilder &b, const Node &n, llvm::ArrayRef<Value *> d, std::vector<Value *> &dIn) -> llvm::Error {
    // dx = dy - softmax * sum(dy)
    Value *y = n.output();
    int64_t axis = normalizeAxis(n.intAttr("axis", -1), y->type().rank());
    Value *s = b.op("ReduceSum", {d[0], b.ints({axis})}, keep());
    dIn[0] = b.op("Sub", {d[0], b.op("Mul", {b.op("Exp", {y}), s})});
    return llvm::Error::success();
  };
  t["LayerNormalization"] = [](GradBuilder &b, const Node &n, llvm::ArrayRef<Value *> d,
                               std::vector<Value *> &dIn) -> llvm::Error {
    if (!d[0])
      return llvm::Error::success();
    Value *x = n.input(0), *g = n.input(1);
    int64_t rank = x->type().rank(), axis = normalizeAxis(n.intAttr("axis", -1), rank);
    DType t = x->type().dtype;
    std::vector<int64_t> axes;
    for (int64_t a = axis; a < rank; ++a)
      axes.push_back(a);
    auto mean = [&](Value *v) { return b.op("ReduceMean", {v}, {{"axes", Attribute::ofInts(axes)}, {"keepdims", Attribute::ofInt(1)}}); };
    Value *xc = b.op("Sub", {x, mean(x)});
    Value *var = mean(b.op("Mul", {xc, xc}));
    Value *rstd = b.op("Reciprocal", {b.op("Sqrt", {b.op("Add", {var, b.scalar(n.floatAttr("epsilon", 1e-5), t)})})});
    Value *xhat = b.op("Mul", {xc, rstd});
    Value *dxhat = b.op("Mul", {d[0], g});
    // dx = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat))
    Value *inner = b.op("Sub", {b.op("Sub", {dxhat, mean(dxhat)}), b.op("Mul", {xhat, mean(b.op("Mul", {dxhat, xhat}))})});
    dIn[0] = b.op("Mul", {rstd, inner});
    dIn[1] = b.sumTo(b.op("Mul", {d[0], xhat}), g->type().shape);
    if (n.input(2))
      dIn[2] = b.sumTo(d[0], n.input(2)->type().shape);
    return llvm::Error::success();
  };
  enum Kind { Sum, Mean, Extremum };
  auto reduce = [](Kind kind) {
    return [kind](GradBuilder &b, const Node &n, llvm::ArrayRef<Value *> d, std::vector<Value *> &dIn) -> llvm::Error {
      Value *x = n.input(0);
      const Shape &xs = x->type().shape;
      std::vector<int64_t> axes = n.intsAttr("axes");
      if (n.input(1))
        if (const Tensor *a = constantValue(n.input(1)))
          axes = a->toInts();
      std::vector<bool> reduced(xs.size(), axes.empty());
      for (int64_t a : axes)
        reduced[normalizeAxis(a, static_cast<int64_t>(xs.size()))] = true;
      Shape kept;
      int64_t count = 1;
      for (size_t i = 0; i < xs.size(); ++i) {
        kept.push_back(reduced[i] ? 1 : xs[i]);
        count *= reduced[i] ? xs[i] : 1;
      }
      if (kind == Extremum) {
        // The gradient goes to the elements equal to the max (min), shared
        // evenly among ties (as torch.amax/amin).
        DType t = x->type().dtype;
        std::vector<int64_t> reducedAxes;
        for (size_t i = 0; i < xs.size(); ++i)
          if (reduced[i])
            reducedAxes.push_back(static_cast<int64_t>(i));
        Value *hit = b.op("Cast", {b.op("Equal", {x, b.reshape(n.output(), kept)})},
                          {{"to", Attribute::ofInt(dtypeToOnnx(t))}});
        Value *ties = b.op("ReduceSum", {hit, b.ints(reducedAxes)}, keep());
        dIn[0] = b.op("Mul", {b.op("Div", {hit, ties}), b.reshape(d[0], kept)});
        return llvm::Error::success();
      }
      Value *g = b.op("Expand", {b.reshape(d[0], kept), b.ints(std::vector<int64_t>(xs.begin(), xs.end()))});
      dIn[0] = kind == Mean ? b.op("Div", {g, b.scalar(static_cast<double>(count), x->type().dtype)}) : g;
      return llvm::Error::success();
    };
  };
  t["ReduceSum"] = reduce(Sum);
  t["ReduceMean"] = reduce(Mean);
  t["ReduceMax"] = reduce(Extremum);
  t["ReduceMin"] = reduce(Extremum);
}

} // namespace partita
