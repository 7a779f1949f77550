//===- FuseLinear.cpp - fuse-linear pass ----------------------------------===//
//
// One representation for a dense layer: partita.Linear(x, w[K,N], b[N]),
// y = x·w + b. Rewrites MatMul by a 2-D operand followed by the Add of a
// 1-D bias, and Gemm (alpha = beta = 1, no transA, 1-D C); Gemm's transB becomes
// an explicit Transpose of the weight. A MatMul without bias stays MatMul.
//
//   %h = MatMul(%x, %w) : f32[2,8,32]
//   %y = Add(%h, %b)    : f32[2,8,32]   →   %y = partita.Linear(%x, %w, %b)
//===----------------------------------------------------------------------===//
#include "passes/PatternMatch.h"
#include "passes/Passes.h"

namespace partita {

namespace {

bool isBiasFor(const Value *b, int64_t n) {
  return b && b->type().shape.size() == 1 && b->type().shape[0] == n;
}

class FuseLinear : public Pass {
public:
  llvm::StringRef name() const override { return "fuse-linear"; }

  llvm::Error run(Graph &g) override {
    for (Node *n : g.nodes()) {
      if (n->isErased())
        continue;
      if (n->is("MatMul"))
        fuseMatMulAdd(g, n);
      else if (n->is("Gemm"))
        fuseGemm(g, n);
    }
    return llvm::Error::success();
  }

private:
  void fuseMatMulAdd(Graph &g, Node *mm) {
    Value *x = mm->input(0), *w = mm->input(1), *h = mm->output();
    if (w->type().rank() != 2 || x->type().rank() < 1)
      return;
    Node *add = singleUser(g, h);
    if (!add || !add->is("Add"))
      return;
    Value *b = otherOperand(add, h);
    if (!isBiasFor(b, w->type().shape[1]) || add->output()->type() != h->type())
      return;
    replace(g, add->output(), x, w, b, mm->name());
    g.eraseNode(add);
    g.eraseNode(mm);
  }

  void fuseGemm(Graph &g, Node *gemm) {
    if (gemm->floatAttr("alpha", 1.0) != 1.0 || gemm->floatAttr("beta", 1.0) != 1.0 ||
        gemm->intAttr("transA", 0) != 0)
      return;
    Value *x = gemm->input(0), *w = gemm->input(1), *c = gemm->input(2);
    int64_t n = gemm->output()->type().shape[1];
    if (!isBiasFor(c, n))
      return;
    if (gemm->intAttr("transB", 0)) {
      Node *wn = w->definingNode();
      if (wn && wn->is("Weight")) {
        // A weight is transposed by reference: no bytes move until export.
        std::string name = wn->stringAttr("name", "") + ".T";
        w = getOrCreateWeight(g, name, g.weights.find(wn->stringAttr("name", ""))->transposed({1, 0}));
      } else {
        Node *t = g.createNode("Transpose", {w}, {w->name() + ".T"}, "", gemm->name() + ".transpose");
        t->setAttr("perm", Attribute::ofInts({1, 0}));
        t->output()->type() = TensorType{w->type().dtype, {w->type().shape[1], w->type().shape[0]}, true};
        w = t->output();
      }
    }
    replace(g, gemm->output(), x, w, c, gemm->name());
    g.eraseNode(gemm);
  }

  void replace(Graph &g, Value *old, Value *x, Value *w, Value *b, const std::string &nodeName) {
    g.requireOpset(kPartitaOpsMinOpset);
    Node *lin = g.createNode("Linear", {x, w, b}, {old->name()}, "partita", nodeName);
    lin->output()->type() = old->type();
    g.replaceAllUsesWith(old, lin->output(), /*takeName=*/true);
  }
};
} // namespace

PassInfo fuseLinearPass() {
  return {"fuse-linear", "MatMul + bias Add, and Gemm, to partita.Linear",
          "Rewrites MatMul(x, w 2-D) followed by Add(·, b[N]) as its only use, and Gemm with "
          "alpha=beta=1, transA=0 and a 1-D bias, into partita.Linear(x, w, b).",
          [] { return std::make_unique<FuseLinear>(); }};
}

} // namespace partita
