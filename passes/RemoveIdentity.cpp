//===- RemoveIdentity.cpp - remove-identity pass --------------------------===//
//
// Forwards the input of nodes that compute the identity: Identity,
// inference-mode Dropout, Cast to the same type, Reshape/Expand to the same
// shape.
//
//   %y = Dropout(%x) : f32[2,8]   ; uses of %y now use %x
//===----------------------------------------------------------------------===//
#include "passes/PatternMatch.h"
#include "passes/Passes.h"

namespace partita {

namespace {
bool isInferenceDropout(const Node &n) {
  if (!n.is("Dropout"))
    return false;
  // Opset 12+: training_mode is input 2 (default false); a mask output in use
  // would need materialising.
  if (n.input(2)) {
    auto mode = scalarConstant(n.input(2));
    if (!mode || *mode != 0)
      return false;
  }
  return n.numOutputs() < 2 || !n.output(1)->hasUsers();
}

bool isIdentity(const Node &n) {
  if (n.is("Identity") || isInferenceDropout(n))
    return true;
  bool sameType = n.numInputs() >= 1 && n.input(0) && n.numOutputs() == 1 &&
                  n.input(0)->type() == n.output()->type();
  return sameType && (n.is("Cast") || n.is("Reshape") || n.is("Expand"));
}

class RemoveIdentity : public Pass {
public:
  llvm::StringRef name() const override { return "remove-identity"; }
  llvm::Error run(Graph &g) override {
    for (Node *n : g.nodes()) {
      if (!isIdentity(*n))
        continue;
      Value *in = n->input(0), *out = n->output(0);
      // A graph input feeding a graph output directly would rename one of them.
      if (g.isGraphOutput(out) && (g.isGraphInput(in) || g.isGraphOutput(in)))
        continue;
      g.replaceAllUsesWith(out, in, /*takeName=*/g.isGraphOutput(out));
      g.eraseNode(n);
    }
    return llvm::Error::success();
  }
};
} // namespace

PassInfo removeIdentityPass() {
  return {"remove-identity", "Remove Identity, inference Dropout and no-op Cast/Reshape/Expand",
          "Forwards the operand of nodes that compute the identity. Graph output names are kept.",
          "", [] { return std::make_unique<RemoveIdentity>(); }};
}

} // namespace partita
