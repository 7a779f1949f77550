//===- FuseLayerNorm.cpp - fuse-layernorm pass ----------------------------===//
//
// Recognises LayerNorm written out in primitive ops (what torch exports below
// opset 17) and replaces it with LayerNormalization:
//
//   m = ReduceMean(x, axes) ; d = Sub(x, m)
//   v = ReduceMean(Pow(d, 2) | Mul(d, d), axes)
//   y = Div(d, Sqrt(Add(v, eps)))        [ · Mul(γ) ] [ + Add(β) ]
//
// axes must be the trailing dimensions (LayerNormalization's `axis` form).
// Without γ a ones scale is made.
//===----------------------------------------------------------------------===//
#include "passes/PatternMatch.h"
#include "passes/Passes.h"
#include "compiler/ops/OpRegistry.h"

namespace partita {

namespace {

/// First normalised axis when `mean` reduces exactly the trailing dims with
/// keepdims; -1 otherwise.
int64_t trailingAxis(const Node *mean, int64_t rank) {
  if (!mean || mean->intAttr("keepdims", 1) != 1)
    return -1;
  std::vector<int64_t> axes = mean->intsAttr("axes");
  if (mean->input(1)) {
    const Tensor *t = constantValue(mean->input(1));
    if (!t)
      return -1;
    axes = t->toInts();
  }
  if (axes.empty())
    return -1;
  std::vector<bool> reduced(rank, false);
  for (int64_t a : axes) {
    int64_t ax = normalizeAxis(a, rank);
    if (ax < 0)
      return -1;
    reduced[ax] = true;
  }
  int64_t first = rank - static_cast<int64_t>(axes.size());
  for (int64_t i = 0; i < rank; ++i)
    if (reduced[i] != (i >= first))
      return -1;
  return first;
}

bool broadcastsInto(const Value *p, llvm::ArrayRef<int64_t> norm) {
  const Shape &s = p->type().shape;
  if (s.size() > norm.size())
    return false;
  size_t off = norm.size() - s.size();
  for (size_t i = 0; i < s.size(); ++i)
    if (s[i] != norm[off + i])
      return false;
  return true;
}

class FuseLayerNorm : public Pass {
public:
  llvm::StringRef name() const override { return "fuse-layernorm"; }

  llvm::Error run(Graph &g) override {
    for (Node *n : g.nodes())
      if (!n->isErased() && n->is("Div"))
        tryFuse(g, n);
    return llvm::Error::success();
  }

private:
  void tryFuse(Graph &g, Node *div) {
    Node *sub = definedBy(div->input(0), "Sub");
    Node *sqrt = definedBy(div->input(1), "Sqrt");
    if (!sub || !sqrt)
      return;
    Value *x = sub->input(0), *d = sub->output();
    Node *mean = definedBy(sub->input(1), "ReduceMean");
    if (!mean || mean->input(0) != x || !isFloat(x->type().dtype))
      return;
    int64_t rank = x->type().rank();
    int64_t axis = trailingAxis(mean, rank);
    if (axis < 0)
      return;
    Node *addEps = definedBy(sqrt->input(0), "Add");
    if (!addEps)
      return;
    Node *var = nullptr;
    Value *epsV = nullptr;
    for (int i = 0; i < 2 && !var; ++i)
      if ((var = definedBy(addEps->input(i), "ReduceMean")))
        epsV = addEps->input(1 - i);
    auto eps = scalarConstant(epsV);
    if (!var || !eps || trailingAxis(var, rank) != axis)
      return;
    Node *sq = var->input(0)->definingNode();
    bool isSquare = sq && ((sq->is("Pow") && sq->input(0) == d && isScalar(sq->input(1), 2.0)) ||
                           (sq->is("Mul") && sq->input(0) == d && sq->input(1) == d));
    if (!isSquare)
      return;
    // Every intermediate must be private to the pattern.
    if (!onlyUsedBy(g, d, {sq, div}) || !singleUser(g, mean->output()) ||
        !singleUser(g, sq->output()) || !singleUser(g, var->output()) ||
        !singleUser(g, addEps->output()) || !singleUser(g, sqrt->output()))
      return;

    llvm::ArrayRef<int64_t> norm = llvm::ArrayRef<int64_t>(x->type().shape).drop_front(axis);
    Value *result = div->output(), *scale = nullptr, *bias = nullptr;
    std::vector<Node *> dead = {div, sqrt, addEps, var, sq, sub, mean};
    Node *mul = singleUser(g, result);
    if (mul && mul->is("Mul")) {
      Value *s = otherOperand(mul, result);
      if (s && s->type().dtype == x->type().dtype && broadcastsInto(s, norm) &&
          mul->output()->type() == x->type()) {
        scale = s;
        result = mul->output();
        dead.push_back(mul);
      }
    }
    Node *add = scale ? singleUser(g, result) : nullptr;
    if (add && add->is("Add")) {
      Value *b = otherOperand(add, result);
      if (b && b->type().dtype == x->type().dtype && broadcastsInto(b, norm) &&
          add->output()->type() == x->type()) {
        bias = b;
        result = add->output();
        dead.push_back(add);
      }
    }
    if (!scale) {
      std::vector<double> ones(static_cast<size_t>(numElements(norm)), 1.0);
      scale = g.createConstant(Tensor::fromDoubles(x->type().dtype, Shape(norm.begin(), norm.end()), ones),
                               x->name() + ".ln_scale");
    }
    std::vector<Value *> ins = {x, scale};
    if (bias)
      ins.push_back(bias);
    g.requireOpset(17);
    Node *ln = g.createNode("LayerNormalization", ins, {result->name()}, "", mean->name());
    ln->setAttr("axis", Attribute::ofInt(axis));
    ln->setAttr("epsilon", Attribute::ofFloat(static_cast<float>(*eps)));
    ln->output()->type() = result->type();
    g.replaceAllUsesWith(result, ln->output(), /*takeName=*/true);
    for (Node *n : dead)
      g.eraseNode(n);
  }
};
} // namespace

PassInfo fuseLayerNormPass() {
  return {"fuse-layernorm", "Decomposed LayerNorm to LayerNormalization",
          "Matches ReduceMean/Sub/Pow/ReduceMean/Add(eps)/Sqrt/Div with optional affine Mul/Add "
          "over trailing axes and replaces it with one LayerNormalization.",
          [] { return std::make_unique<FuseLayerNorm>(); }};
}

} // namespace partita
