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
#include "passes/Passes.h"

namespace partita {

namespace {
class FoldConstants : public Pass {
public:
  llvm::StringRef name() const override { return "fold-constants"; }

  llvm::Error setOption(llvm::StringRef key, llvm::StringRef value) override {
    if (key != "max-elements")
      return Pass::setOption(key, value);
    if (value.getAsInteger(10, maxElements_) || maxElements_ < 0)
      return passError(name(), "option max-elements expects a non-negative integer, got '" + value + "'");
    return llvm::Error::success();
  }

  llvm::Error run(Graph &g) override {
    ConstantEvaluator eval(maxElements_);
    for (Node *n : g.nodes()) {
      if (n->is("Constant"))
        continue;
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
  int64_t maxElements_ = 1 << 16;
};
} // namespace

PassInfo foldConstantsPass() {
  return {"fold-constants", "Fold compile-time computable nodes into Constants",
          "Evaluates nodes whose inputs are Constants, and Shape/Size of static values, "
          "replacing them with Constant nodes. Expects a typed graph; guarantees no foldable "
          "node with a result of at most max-elements elements remains. Never reads weights.",
          "max-elements=int (65536): largest result folded",
          [] { return std::make_unique<FoldConstants>(); }};
}

} // namespace partita
