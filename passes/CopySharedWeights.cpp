//===- CopySharedWeights.cpp - one copy of a shared weight per stage ------===//
//
// copy-shared-weights runs on the forward with its loss, after assign-stages
// and before autodiff. A trained weight that nodes of several pipeline stages
// read (an embedding table tied to the LM head: the first stage's lookup and
// the last stage's head) becomes one weight per stage, as Megatron keeps the
// word embeddings on both the first and the last stage: the first stage keeps
// the weight, every later stage reading it gets a copy of its own,
// `<weight>.stage<s>` (Plan.h sharedWeightCopy), declared with the same bytes
// and attribute `copy_of` naming the weight. Autodiff then gives each copy
// the gradient of its own stage's readers, add-optimizer an update of its own
// (and leaves it out of the gradient norm: the parameter counts once), and
// the runtime sums the copies' gradients between the stages before the
// optimizer step (Plan::pipelineWeights). Equal bytes, equal summed
// gradients and equal moments give equal updates: the copies stay the one
// parameter without sending it.
//
// Refused, naming it: a shared trained weight read by a node no stage was
// given (assign-stages places every node that reads a layer's values), and a
// copy's name already taken.
//===----------------------------------------------------------------------===//
#include "compiler/ops/OpRegistry.h"
#include "compiler/plan/Plan.h"
#include "passes/ClassifyParameters.h"
#include "passes/Passes.h"
#include <map>

namespace partita {

namespace {

class CopySharedWeights : public Pass {
public:
  llvm::StringRef name() const override { return "copy-shared-weights"; }

  llvm::Error run(Graph &g) override {
    std::vector<Node *> weights;
    for (Node *n : g.nodes())
      if (isTrainableWeight(*n))
        weights.push_back(n);
    bool changed = false;
    for (Node *w : weights) {
      std::map<int64_t, std::vector<Node *>> readers; // by stage
      for (Node *u : w->output()->users()) {
        if (hasTrait(*u, OpTrait::Source))
          continue;
        if (!u->hasAttr(kStageAttr)) {
          readers.clear();
          if (llvm::any_of(w->output()->users(), [](const Node *o) { return o->hasAttr(kStageAttr); }))
            return passError(name(), "trained weight %" + w->output()->name() + " is read by node " + u->describe() +
                                         ", which is on no pipeline stage");
          break;
        }
        auto &list = readers[u->intAttr(kStageAttr, 0)];
        if (!llvm::is_contained(list, u))
          list.push_back(u);
      }
      if (readers.size() < 2)
        continue;
      const std::string &original = w->output()->name();
      const WeightRef *ref = g.weights.find(w->stringAttr("name", original));
      for (auto it = std::next(readers.begin()); it != readers.end(); ++it) {
        std::string copy = sharedWeightCopy(original, it->first);
        if (g.findValue(copy) || g.weights.find(copy))
          return passError(name(), "the copy of %" + original + " for stage " + llvm::Twine(it->first) +
                                       " would be named '" + copy + "', a name the model already has");
        WeightRef r = ref ? *ref : WeightRef{};
        if (r.source.empty())
          r.source = w->stringAttr("name", original);
        g.weights.add(copy, r);
        Node *c = g.createNode("Weight", {}, {copy});
        for (const auto &[key, value] : w->attrs()) // `tied` too: annotate-megatron splits a tied head's table
          if (key != "tie_suspected")
            c->setAttr(key, value);
        c->setAttr("name", Attribute::ofString(copy));
        c->setAttr(kCopyOfAttr, Attribute::ofString(original));
        c->output()->type() = w->output()->type();
        for (Node *u : it->second)
          for (size_t i = 0; i < u->numInputs(); ++i)
            if (u->input(i) == w->output())
              u->setInput(i, c->output());
        changed = true;
      }
    }
    if (changed)
      if (auto err = g.sortTopologically())
        return passError(name(), llvm::toString(std::move(err)));
    return llvm::Error::success();
  }
};

} // namespace

PassInfo copySharedWeightsPass() {
  return {"copy-shared-weights", "Give each pipeline stage its own copy of a trained weight several stages read",
          "After assign-stages, before autodiff: every later stage reading a trained weight the first stage reads "
          "too (a tied embedding's head) reads a copy, <weight>.stage<s>, with the same bytes and copy_of naming "
          "the weight; the copies' gradients are summed between the stages before the step (Megatron's shared "
          "word embeddings).",
          [] { return std::make_unique<CopySharedWeights>(); }};
}

} // namespace partita
