//===- DeadCodeElimination.cpp - dce pass ---------------------------------===//
//
// Erases nodes none of whose results reach a graph output. Nodes are pure, so
// an unused result means an unneeded node.
//===----------------------------------------------------------------------===//
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
      bool live = false;
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
