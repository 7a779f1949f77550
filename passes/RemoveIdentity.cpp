//===- RemoveIdentity.cpp - remove-identity pass --------------------------===//
//
// Forwards the input of nodes that compute the identity: Identity,
// inference-mode Dropout, Cast to the same type, Reshape/Expand to the same
// shape, and multiplying by one or adding zero.
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
  // Opset 12+: training_mode is input 2 (default false), and a training-mode
  // Dropout of ratio 0 (a training-mode export with p = 0) drops nothing
  // either; a mask output in use would need materialising.
  if (n.input(2)) {
    auto mode = scalarConstant(n.input(2));
    auto ratio = n.input(1) ? scalarConstant(n.input(1)) : std::nullopt;
    if ((!mode || *mode != 0) && (!ratio || *ratio != 0))
      return false;
  }
  return n.numOutputs() < 2 || !n.output(1)->hasUsers();
}

/// x*1, 1*x, x/1, x+0, 0+x, x-0 (when the constant does not broadcast x up).
bool isNeutralArithmetic(const Node &n) {
  if (n.numInputs() != 2 || !n.input(0) || !n.input(1))
    return false;
  bool mul = n.is("Mul"), add = n.is("Add");
  if ((mul || add) && n.input(1)->type() == n.output()->type() && isScalar(n.input(0), mul ? 1.0 : 0.0, 0.0))
    return true; // 1*x, 0+x: the pass forwards operand 1
  double neutral = (mul || n.is("Div")) ? 1.0 : 0.0;
  return (mul || add || n.is("Div") || n.is("Sub")) && n.input(0)->type() == n.output()->type() &&
         isScalar(n.input(1), neutral, 0.0);
}

bool isIdentity(const Node &n) {
  if (n.is("Identity") || isInferenceDropout(n) || isNeutralArithmetic(n))
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
      if (n->numInputs() == 2 && scalarConstant(n->input(0)) && !scalarConstant(n->input(1)))
        in = n->input(1); // 1*x, 0+x
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
          [] { return std::make_unique<RemoveIdentity>(); }};
}

} // namespace partita
