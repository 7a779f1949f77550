//===- FoldConstants.cpp - fold-constants pass ----------------------------===//
//
// Replaces every node whose results are computable at compile time with
// Constants: nodes over Constants, and Shape/Size of statically shaped values,
// so the Shape→Gather→Concat→Reshape chains of dynamic-batch exports collapse
// to literal shapes. Weights are never read. Results larger than
// `max-elements` stay computed at run time.
//
//   %s = Shape(%x) : i64[2]          →   %s = Constant() {value = dense<i64[2]>[2, 16]}
//===----------------------------------------------------------------------===//
#include "compiler/ops/ConstantEvaluator.h"
#include "compiler/ops/OpRegistry.h"
#include <algorithm>
#include "passes/Passes.h"

namespace partita {

namespace {
class FoldConstants : public Pass {
public:
  llvm::StringRef name() const override { return "fold-constants"; }

  llvm::Error run(Graph &g) override {
    ConstantEvaluator eval(maxElements_);
    for (Node *n : g.nodes()) {
      if (n->is("Constant"))
        continue;
      if (Value *view = weightView(g, *n)) {
        g.replaceAllUsesWith(n->output(), view, /*takeName=*/false);
        g.eraseNode(n);
        continue;
      }
      auto folded = eval.tryEvaluate(*n);
      if (!folded)
        return passError(name(), llvm::toString(folded.takeError()));
      if (!*folded)
        continue;
      for (Value *out : n->outputs()) {
        if (!out->hasUsers() && !g.isGraphOutput(out))
          continue;
        Value *c = g.createConstant(*eval.valueOf(out), out->name());
        g.replaceAllUsesWith(out, c, /*takeName=*/true);
      }
      g.eraseNode(n);
    }
    return llvm::Error::success();
  }

private:
  PassOption<int64_t> maxElements_{this, "max-elements", 1 << 16, "largest result folded", atLeast<int64_t>(0)};

  /// Slice/Transpose of a Weight as a view of it, or nullptr.
  static Value *weightView(Graph &g, const Node &n) {
    Node *w = n.numInputs() ? (n.input(0) ? n.input(0)->definingNode() : nullptr) : nullptr;
    if (!w || !w->is("Weight") || !n.output()->type().isStatic())
      return nullptr;
    std::string base = w->stringAttr("name", "");
    const WeightRef *ref = g.weights.find(base);
    if (!ref)
      return nullptr;
    const Shape &in = w->output()->type().shape, &out = n.output()->type().shape;
    if (n.is("Transpose") && ref->viewStart.empty()) {
      std::vector<int64_t> perm = transposePerm(n);
      std::vector<int64_t> composed = perm;
      if (!ref->perm.empty()) // transposing a transposed weight: compose the permutations
        for (size_t i = 0; i < perm.size(); ++i)
          composed[i] = ref->perm[perm[i]];
      std::string name = base + ".T" + shapeString(std::vector<int64_t>(perm.begin(), perm.end()));
      WeightRef t = *ref;
      t.perm.clear();
      t.type.shape = ref->perm.empty() ? in : ref->storedShape;
      return getOrCreateWeight(g, name, t.transposed(composed));
    }
    if (n.is("Slice")) {
      const Tensor *starts = constantValue(n.input(1));
      const Tensor *axes = n.input(3) ? constantValue(n.input(3)) : nullptr;
      const Tensor *steps = n.input(4) ? constantValue(n.input(4)) : nullptr;
      if (!starts || (n.input(3) && !axes) || (n.input(4) && !steps))
        return nullptr;
      Shape start(in.size(), 0);
      for (int64_t k = 0; k < starts->numel(); ++k) {
        int64_t axis = axes ? normalizeAxis(axes->intAt(k), static_cast<int64_t>(in.size())) : k;
        if (axis < 0 || (steps && steps->intAt(k) != 1))
          return nullptr;
        int64_t b = starts->intAt(k);
        if (b < 0)
          b += in[axis];
        start[axis] = std::clamp<int64_t>(b, 0, in[axis]);
      }
      return getOrCreateWeight(g, weightViewName(base, start, out), ref->view(start, out));
    }
    return nullptr;
  }
};
} // namespace

PassInfo foldConstantsPass() {
  return {"fold-constants", "Fold compile-time computable nodes into Constants",
          "Evaluates nodes whose inputs are Constants, and Shape/Size of static values, "
          "replacing them with Constant nodes. Expects a typed graph; guarantees no foldable "
          "node with a result of at most max-elements elements remains. Never reads weights.",
          [] { return std::make_unique<FoldConstants>(); }};
}

} // namespace partita
