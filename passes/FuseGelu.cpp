//===- FuseGelu.cpp - fuse-gelu pass --------------------------------------===//
//
// Recognises GELU written out in primitive ops, whatever the association of
// the products, and replaces it with one op:
//
//   0.5·x·(1 + erf(x/√2))                          → partita.Gelu(x)
//   0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))     → partita.FastGelu(x)
//
// x/√2 may be written Div(x, 1.4142…) or Mul(x, 0.7071…); x³ as Pow(x, 3) or
// products of x. The half may multiply x, (1 + …), or the product.
//===----------------------------------------------------------------------===//
#include "passes/PatternMatch.h"
#include "passes/Passes.h"
#include <cmath>

namespace partita {

namespace {

constexpr double kSqrt2 = 1.4142135623730951;
constexpr double kSqrt2OverPi = 0.7978845608028654;
constexpr double kTol = 1e-4; // exporters round these constants to float32 or fewer digits

/// x when `v` is x/√2 (Div by √2 or Mul by 1/√2).
Value *erfArgument(const Value *v) {
  if (Node *d = definedBy(v, "Div"))
    return isScalar(d->input(1), kSqrt2, kTol) ? d->input(0) : nullptr;
  if (Node *m = definedBy(v, "Mul"))
    return operandBesideScalar(m, 1.0 / kSqrt2, kTol);
  return nullptr;
}

bool isCubeOf(const Value *v, const Value *x) {
  if (Node *p = definedBy(v, "Pow"))
    return p->input(0) == x && isScalar(p->input(1), 3.0);
  Node *m = definedBy(v, "Mul");
  if (!m)
    return false;
  for (int i = 0; i < 2; ++i) {
    Node *sq = definedBy(m->input(1 - i), "Mul");
    if (m->input(i) == x && sq && sq->input(0) == x && sq->input(1) == x)
      return true;
  }
  return false;
}

/// x when `v` is √(2/π)·(x + 0.044715·x³).
Value *tanhArgument(const Value *v) {
  Node *m = definedBy(v, "Mul");
  Value *inner = m ? operandBesideScalar(m, kSqrt2OverPi, kTol) : nullptr;
  Node *add = definedBy(inner, "Add");
  if (!add)
    return nullptr;
  for (int i = 0; i < 2; ++i) {
    Value *x = add->input(i);
    Node *scaled = definedBy(add->input(1 - i), "Mul");
    Value *cube = scaled ? operandBesideScalar(scaled, 0.044715, kTol) : nullptr;
    if (cube && isCubeOf(cube, x))
      return x;
  }
  return nullptr;
}

class FuseGelu : public Pass {
public:
  llvm::StringRef name() const override { return "fuse-gelu"; }

  llvm::Error run(Graph &g) override {
    for (Node *n : g.nodes()) {
      if (n->isErased())
        continue;
      if (n->is("Erf"))
        tryFuse(g, n, erfArgument(n->input(0)), "Gelu");
      else if (n->is("Tanh"))
        tryFuse(g, n, tanhArgument(n->input(0)), "FastGelu");
    }
    return llvm::Error::success();
  }

private:
  /// `core` is the Erf/Tanh node; finds 1 + core and the product with x and ½.
  void tryFuse(Graph &g, Node *core, Value *x, llvm::StringRef op) {
    if (!x || !singleUser(g, core->input(0)) || !singleUser(g, core->output()))
      return;
    Node *plusOne = core->output()->users()[0];
    if (!plusOne->is("Add") || otherOperand(plusOne, core->output()) == nullptr ||
        !isScalar(otherOperand(plusOne, core->output()), 1.0))
      return;
    Value *a = plusOne->output();
    Node *m1 = singleUser(g, a);
    if (!m1 || !m1->is("Mul"))
      return;
    Value *o = otherOperand(m1, a);
    Node *result = nullptr, *half = nullptr;
    if (o == x || isScalar(o, 0.5)) {
      Node *m2 = singleUser(g, m1->output());
      Value *rest = m2 && m2->is("Mul") ? otherOperand(m2, m1->output()) : nullptr;
      if (rest && ((o == x && isScalar(rest, 0.5)) || (o != x && rest == x)))
        result = m2;
    } else if (Node *h = definedBy(o, "Mul")) {
      if (operandBesideScalar(h, 0.5) == x && singleUser(g, o)) {
        result = m1;
        half = h;
      }
    }
    if (!result || result->output()->type() != x->type())
      return;
    // The argument chain (x/√2, the cubic) is left to dce: parts may be shared.
    std::vector<Node *> dead = {result, m1, plusOne, core};
    if (half)
      dead.push_back(half);
    g.requireOpset(kPartitaOpsMinOpset);
    Node *gelu = g.createNode(op, {x}, {result->output()->name()}, "partita", core->name());
    gelu->output()->type() = x->type();
    g.replaceAllUsesWith(result->output(), gelu->output(), /*takeName=*/true);
    for (Node *n : dead)
      g.eraseNode(n);
  }
};
} // namespace

PassInfo fuseGeluPass() {
  return {"fuse-gelu", "Erf and tanh GELU chains to partita.Gelu / partita.FastGelu",
          "Replaces 0.5·x·(1+erf(x/√2)) by partita.Gelu and the tanh approximation by "
          "partita.FastGelu, for any association of the products.",
          [] { return std::make_unique<FuseGelu>(); }};
}

} // namespace partita
