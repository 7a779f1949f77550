//===- WeightValuesInBackward.cpp - weights-into-backward pass -------------===//
//
// A value the forward makes from weights and constants alone (a half
// weight widened for a product, a fused projection's slice of it, a
// transpose), which the backward reads too, would be saved: the forward
// program would hand the backward a copy of it for every micro-batch in
// flight, as if it were an activation. Under mixed precision that is a
// float32 copy of every such weight, twice its half bytes, per micro-batch
// (the row-parallel projections' widened weights of every layer), and the
// backward's products then read a float32 operand where the half weight is
// at hand.
//
// This pass gives the backward its own copies of such chains instead: each
// backward reader of a weight-made value reads a copy of the nodes that make
// it, tagged as backward nodes (with the reader's pipeline stage), so the
// value is made again from the weights, which the backward holds anyway.
// The nodes are cheap (casts, slices, transposes, reshapes: no products);
// a chain through a collective (ZeRO-3's gather of a weight's parts, which
// the backward already gathers itself) is left alone. The mathematics is the
// same: the same operations on the same weights.
//===----------------------------------------------------------------------===//
#include "compiler/ops/OpRegistry.h"
#include "compiler/plan/Names.h"
#include "passes/AddOptimizer.h"
#include "passes/Passes.h"
#include "passes/SplitPrograms.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include <functional>

namespace partita {

namespace {

class WeightValuesInBackward : public Pass {
public:
  llvm::StringRef name() const override { return "weights-into-backward"; }

  llvm::Error run(Graph &g) override {
    const std::vector<Node *> nodes = g.nodes();
    // The programs as split-programs cuts them (a recomputed node belongs
    // to the backward through what it reads, untagged).
    const llvm::DenseMap<const Node *, std::string> programOf = assignPrograms(g);
    auto inProgram = [&](const Node &n, llvm::StringRef p) { return programOf.lookup(&n) == p; };
    // Forward nodes whose operands all come from weights, constants and
    // such nodes, with no communication and no product among them.
    llvm::DenseSet<const Node *> madeOfWeights;
    for (const Node *n : nodes) {
      if (!inProgram(*n, kForwardProgram) || n->numInputs() == 0 || hasTrait(*n, OpTrait::Collective) ||
          hasTrait(*n, OpTrait::Contraction))
        continue;
      bool all = true;
      for (const Value *in : n->inputs()) {
        const Node *def = in ? in->definingNode() : nullptr;
        all &= !in || (def && (def->is("Weight") || def->is("Constant") || madeOfWeights.count(def)));
      }
      if (all)
        madeOfWeights.insert(n);
    }
    llvm::DenseMap<const Value *, Value *> copyOf; // per stage attribute: a value's backward copy
    std::function<Value *(Value *, const Attribute *)> backwardCopy = [&](Value *v, const Attribute *stage) {
      Node *def = v->definingNode();
      if (!def || !madeOfWeights.count(def))
        return v; // a weight or constant: read as it is
      if (Value *c = copyOf.lookup(v); c && sameStage(c, stage))
        return c;
      std::vector<Value *> ins;
      for (Value *in : def->inputs())
        ins.push_back(in ? backwardCopy(in, stage) : nullptr);
      Node *m = g.cloneNode(*def, ins, ".backward");
      m->setAttr(optimizer_io::kProgramAttr, Attribute::ofString(optimizer_io::kBackward));
      if (stage)
        m->setAttr(kStageAttr, *stage);
      for (size_t i = 0; i < def->numOutputs(); ++i)
        copyOf[def->output(i)] = m->output(i);
      return copyOf.lookup(v);
    };
    bool changed = false;
    for (Node *u : nodes) {
      if (!inProgram(*u, optimizer_io::kBackward))
        continue;
      for (size_t i = 0; i < u->numInputs(); ++i) {
        Value *in = u->input(i);
        const Node *def = in ? in->definingNode() : nullptr;
        if (!def || !madeOfWeights.count(def))
          continue;
        u->setInput(i, backwardCopy(in, u->attr(kStageAttr)));
        changed = true;
      }
    }
    if (changed)
      return g.sortTopologically();
    return llvm::Error::success();
  }

private:
  static bool sameStage(const Value *copy, const Attribute *stage) {
    const Attribute *s = copy->definingNode()->attr(kStageAttr);
    return (!s && !stage) || (s && stage && *s == *stage);
  }
};

} // namespace

PassInfo weightValuesInBackwardPass() {
  return {"weights-into-backward",
          "The backward makes again what the forward makes from weights alone (casts, slices, transposes), "
          "instead of receiving it saved",
          "Before split-programs: each backward reader of a forward value computed from weights and constants "
          "only (no product, no collective) reads a copy of the nodes that make it, tagged program=backward "
          "(and with the reader's stage), so the forward saves no copy of a weight per micro-batch.",
          [] { return std::make_unique<WeightValuesInBackward>(); }};
}

} // namespace partita
