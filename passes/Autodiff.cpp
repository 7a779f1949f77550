//===- Autodiff.cpp - autodiff pass ---------------------------------------===//
//
// Reverse-mode differentiation on the global, unpartitioned graph. Graph
// output 0 must be a one-element float loss; the pass appends the backward
// nodes and, for every trainable float weight (classify-parameters marks
// buffers frozen: they get no gradient and no backward nodes) or, with
// wrt=inputs, every float graph input the loss depends on, a graph output
// "grad.<name>". Each op's rule
// lives with its family in passes/autodiff/; an op on the path to the loss
// without a rule is an error naming it. Sharding then partitions the backward
// graph like the forward one. The backward's nodes are tagged program =
// "backward", so split-programs can make them a program of their own.
// With loss-scale=1 the backward starts from a new graph input `loss_scale`
// (f32[]) instead of 1: every gradient is the loss scale times the loss's, as
// fp16 training's loss scaling needs (the trainer divides it out).
//
//   %loss = ReduceSum(%y) ...          →  ... return %loss, %"grad.w"
//===----------------------------------------------------------------------===//
#include "compiler/ops/OpRegistry.h"
#include "passes/AddOptimizer.h"
#include "passes/ClassifyParameters.h"
#include "passes/Passes.h"
#include "passes/autodiff/GradBuilder.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

namespace partita {

namespace {

class Autodiff : public Pass {
public:
  llvm::StringRef name() const override { return "autodiff"; }

  llvm::Error run(Graph &g) override {
    if (g.outputs().empty())
      return passError(name(), "the graph has no outputs");
    Value *loss = g.outputs()[0];
    if (loss->type().numel() != 1 || !isFloat(loss->type().dtype))
      return passError(name(), "output %" + loss->name() + " is " + loss->type().str() +
                                   "; the loss must be a single float value");
    // Values that vary with what we differentiate by (float weights or
    // inputs, forward through every node); only those carry gradients.
    std::vector<Node *> nodes = g.nodes();
    llvm::DenseSet<const Value *> needed;
    if (wrtInputs()) {
      for (Value *in : g.inputs())
        if (isFloat(in->type().dtype))
          needed.insert(in);
    }
    for (Node *n : nodes) {
      bool varies = !wrtInputs() && isTrainableWeight(*n); // a frozen buffer is a constant here
      for (Value *in : n->inputs())
        varies |= in && needed.count(in);
      if (varies)
        for (Value *out : n->outputs())
          if (isFloat(out->type().dtype))
            needed.insert(out);
    }
    GradBuilder b(g, "grad.t");
    llvm::DenseMap<const Value *, Value *> grads;
    auto accumulate = [&](const Value *v, Value *d) {
      Value *&slot = grads[v];
      slot = slot ? b.op("Add", {slot, d}) : d;
    };
    if (lossScale_) {
      if (g.findValue(optimizer_io::kLossScale))
        return passError(name(), llvm::Twine("the graph already has a value named '") + optimizer_io::kLossScale +
                                     "'");
      Value *scale = g.addInput(optimizer_io::kLossScale, TensorType{DType::F32, {}, true});
      Value *seed = scale; // as the loss is typed: f32[] from add-loss
      if (loss->type().dtype != DType::F32)
        seed = b.op("Cast", {seed}, {{"to", Attribute::ofInt(dtypeToOnnx(loss->type().dtype))}});
      if (loss->type().shape != Shape{})
        seed = b.reshape(seed, loss->type().shape);
      grads[loss] = seed;
    } else {
      grads[loss] = g.createConstant(Tensor::fromDoubles(loss->type().dtype, loss->type().shape, {1.0}), "grad.seed");
    }
    for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
      Node *n = *it;
      std::vector<Value *> dOut;
      bool any = false;
      for (Value *out : n->outputs()) {
        dOut.push_back(grads.lookup(out));
        any |= dOut.back() != nullptr;
      }
      if (!any || hasTrait(*n, OpTrait::Source))
        continue;
      bool wantsInput = false;
      for (Value *in : n->inputs())
        wantsInput |= in && needed.count(in) && isFloat(in->type().dtype);
      if (!wantsInput)
        continue;
      const GradFn *rule = findGradRule(*n);
      if (!rule)
        return passError(name(), "node " + n->describe() + " has no gradient rule");
      std::vector<Value *> dIn(n->numInputs(), nullptr);
      size_t mark = g.creationMark();
      if (auto err = (*rule)(b, *n, dOut, dIn))
        return err;
      if (auto err = b.takeError())
        return passError(name(), "node " + n->describe() + ": " + llvm::toString(std::move(err)));
      for (size_t i = 0; i < n->numInputs(); ++i)
        if (dIn[i] && n->input(i) && isFloat(n->input(i)->type().dtype))
          accumulate(n->input(i), dIn[i]);
      // A node's backward runs on its pipeline stage (assign-stages).
      if (const Attribute *stage = n->attr(kStageAttr))
        for (Node *made : g.nodesCreatedSince(mark))
          if (!made->is("Constant"))
            made->setAttr(kStageAttr, *stage);
    }
    auto emit = [&](Value *v, const std::string &label) -> llvm::Error {
      Value *d = grads.lookup(v);
      if (!d)
        return llvm::Error::success();
      // The output's name is the weight's, prefixed: an intermediate the
      // rules named alike (the builder's "grad.t7" against a weight "t7")
      // gives it up.
      const std::string out = optimizer_io::gradOutput(label);
      if (Value *taken = g.findValue(out)) {
        if (g.isGraphInput(taken) || g.isGraphOutput(taken))
          return passError(name(), "the gradient of '" + label + "' would be named '" + out +
                                       "', which the graph's own input or output already is");
        g.renameValue(taken, "grad.t");
      }
      Node *id = g.createNode("Identity", {d}, {out});
      id->output()->type() = d->type();
      if (const Node *def = d->definingNode(); def && def->hasAttr(kStageAttr))
        id->setAttr(kStageAttr, *def->attr(kStageAttr));
      g.outputs().push_back(id->output());
      return llvm::Error::success();
    };
    if (wrtInputs()) {
      std::vector<Value *> inputs = g.inputs();
      for (Value *in : inputs)
        if (isFloat(in->type().dtype))
          if (auto err = emit(in, in->name()))
            return err;
    } else {
      for (Node *n : nodes)
        if (isTrainableWeight(*n))
          if (auto err = emit(n->output(), n->stringAttr("name", "")))
            return err;
    }
    // Every node made here is the backward's (split-programs' "backward").
    llvm::DenseSet<const Node *> forward(nodes.begin(), nodes.end());
    for (Node *n : g.nodes())
      if (!forward.count(n) && !n->is("Constant"))
        n->setAttr(optimizer_io::kProgramAttr, Attribute::ofString(optimizer_io::kBackward));
    return b.takeError();
  }

private:
  PassOption<std::string> wrt_{this, "wrt", "weights", "what to differentiate with respect to",
                               oneOf({"weights", "inputs"})};
  PassOption<bool> lossScale_{this, "loss-scale", false,
                              "seed the backward with the loss-scale input instead of 1 (fp16)"};
  bool wrtInputs() const { return wrt_.value() == "inputs"; }
};

} // namespace

PassInfo autodiffPass() {
  return {"autodiff", "Append the backward graph of the loss (graph output 0)",
          "Reverse-mode differentiation with one rule per op; adds grad.<name> outputs for every "
          "trainable float weight (or input, wrt=inputs) the loss depends on; weights marked trainable = 0 "
          "(classify-parameters) are constants.",
          [] { return std::make_unique<Autodiff>(); }};
}

} // namespace partita
