//===- DeadCodeElimination.cpp - dce pass ---------------------------------===//
//
// Erases nodes none of whose results reach a graph output. Apart from those
// with side effects (a pipeline's Send and Recv), nodes are pure, so an
// unused result means an unneeded node.
//===----------------------------------------------------------------------===//
#include "compiler/ops/OpRegistry.h"
#include "passes/Passes.h"

namespace partita {

namespace {
class DeadCodeElimination : public Pass {
public:
  llvm::StringRef name() const override { return "dce"; }
  llvm::Error run(Graph &g) override {
    std::vector<Node *> nodes = g.nodes();
    for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
      Node *n = *it;
      bool live = hasTrait(*n, OpTrait::SideEffects);
      for (Value *out : n->outputs())
        live |= out->hasUsers() || g.isGraphOutput(out);
      if (!live)
        g.eraseNode(n);
    }
    return llvm::Error::success();
  }
};
} // namespace

PassInfo deadCodeEliminationPass() {
  return {"dce", "Dead-code elimination", "Erases nodes whose results are not used by any node or graph output.",
          [] { return std::make_unique<DeadCodeElimination>(); }};
}

} // namespace partita
