//===- Recompute.cpp - activation recompute (Megatron's full and selective) ===//
//
// recompute{mode=full|selective} runs on the training graph right after
// autodiff. A forward value the backward reads is saved between a
// micro-batch's forward and its backward; this pass has the backward compute
// some of them again instead, from values that stay saved:
//   full       per transformer layer (named as LayerNames.h says, else as
//              the dataflow shows, LayerStructure.h), every value the
//              backward reads that only the layer itself reads in the
//              forward: the layer's forward runs again in the backward from
//              its inputs (the residual stream coming in, the mask, ...),
//              which stay saved with the layer's output;
//   selective  per attention softmax, the attention core: the scores
//              product (Q·Kᵀ), what scales and masks it, and the softmax
//              ([batch, heads, seq, seq] each), from Q and K as the
//              projections return them (the head reshapes and transposes
//              redone too).
// The copies are ordinary nodes of the backward program (program =
// "backward", the original's stage), which the sort places right before
// their first reader and the memory plan frees after their last; the
// sharding passes give them their collectives. The mathematics is the
// same: the same operations on the same values.
//===----------------------------------------------------------------------===//
#include "compiler/ops/OpRegistry.h"
#include "passes/AddOptimizer.h"
#include "passes/LayerNames.h"
#include "passes/LayerStructure.h"
#include "passes/Passes.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include <map>

namespace partita {

namespace {

using optimizer_io::inBackward;
using optimizer_io::inForward;

class Recompute : public Pass {
public:
  llvm::StringRef name() const override { return "recompute"; }

  llvm::Error run(Graph &g) override {
    if (mode_ == "none")
      return llvm::Error::success();
    std::vector<Node *> nodes = g.nodes();
    if (!llvm::any_of(nodes, [](const Node *n) { return inBackward(*n); }))
      return passError(name(), "the graph has no backward (run autodiff first)");
    std::vector<llvm::DenseSet<const Node *>> groups = mode_ == "full" ? layers(nodes) : attentionCores(nodes);
    if (groups.empty())
      return passError(name(), mode_ == "full"
                                   ? "no layers: no node is named after a numbered layer (\"/h.0/...\"), and the "
                                     "forward has no run of repeating blocks joined by one value (a residual "
                                     "stream): full recompute works per layer"
                                   : "the forward has no attention softmax to recompute");
    for (const auto &group : groups)
      recomputeGroup(g, nodes, group, /*keepBoundary=*/mode_ == "full");
    return g.sortTopologically();
  }

private:
  /// full: the forward's nodes by layer, from their names or else from the dataflow.
  static std::vector<llvm::DenseSet<const Node *>> layers(const std::vector<Node *> &nodes) {
    std::map<std::string, llvm::DenseSet<const Node *>> byLayer;
    std::vector<const Node *> forward;
    for (const Node *n : nodes)
      if (inForward(*n)) {
        forward.push_back(n);
        if (std::string key = layerOf(*n); !key.empty())
          byLayer[key].insert(n);
      }
    std::vector<llvm::DenseSet<const Node *>> out;
    for (auto &[key, set] : byLayer)
      out.push_back(std::move(set));
    if (out.empty())
      for (const std::vector<const Node *> &layer : layersByStructure(forward))
        out.emplace_back(layer.begin(), layer.end());
    return out;
  }

  /// selective: per softmax, it and what makes its operand from the scores
  /// product, through elementwise steps of the softmax's shape.
  static std::vector<llvm::DenseSet<const Node *>> attentionCores(const std::vector<Node *> &nodes) {
    std::vector<llvm::DenseSet<const Node *>> out;
    for (const Node *s : nodes) {
      if (!inForward(*s) || !s->is("Softmax"))
        continue;
      llvm::DenseSet<const Node *> core{s};
      std::vector<const Node *> work{s};
      while (!work.empty()) {
        const Node *n = work.back();
        work.pop_back();
        for (const Value *in : n->inputs()) {
          const Node *def = in ? in->definingNode() : nullptr;
          if (!def || !inForward(*def) || core.count(def) || in->type().shape != s->output()->type().shape)
            continue;
          if (def->is("MatMul")) { // the scores: recomputed from Q and K
            core.insert(def);
            // ... as the projections' outputs, which the backward reads anyway, through the
            // single-result data movement that lays out the heads (transposes, reshapes, a
            // grouped head's repeat: cheap to redo; saving their results would cost what the
            // softmax saves at seq = 2 x head size). A fused projection's Split stays saved:
            // redoing it would keep the whole fused output instead of q and k.
            for (const Value *operand : def->inputs())
              for (const Node *m = operand ? operand->definingNode() : nullptr;
                   m && inForward(*m) && hasTrait(*m, OpTrait::MovesElements) && m->numOutputs() == 1 && !core.count(m);
                   m = m->input(0) ? m->input(0)->definingNode() : nullptr)
                core.insert(m);
          } else if (hasTrait(*def, OpTrait::Elementwise)) { // a step between the scores and the softmax
            core.insert(def);
            work.push_back(def);
          }
        }
      }
      // Under mixed precision the backward reads the softmax's (and the
      // scores') half copies (passes/MixedPrecision.cpp): recomputed with them.
      std::vector<const Node *> members(core.begin(), core.end());
      for (const Node *n : members)
        for (const Value *out : n->outputs())
          for (const Node *u : out->users())
            if (inForward(*u) && u->is("Cast") && isHalfFloat(u->output()->type().dtype))
              core.insert(u);
      out.push_back(std::move(core));
    }
    return out;
  }

  /// The backward reads copies of the group's values it read, computed again
  /// from what the group reads. `keepBoundary`: a value the forward reads
  /// outside the group (a layer's output) stays saved.
  static void recomputeGroup(Graph &g, const std::vector<Node *> &nodes, const llvm::DenseSet<const Node *> &group,
                             bool keepBoundary) {
    llvm::DenseSet<const Value *> targets;
    for (const Node *n : group)
      for (const Value *v : n->outputs()) {
        bool backward = false, outside = g.isGraphOutput(v);
        for (const Node *u : v->users()) {
          backward |= inBackward(*u);
          outside |= inForward(*u) && !group.count(u);
        }
        if (backward && !(keepBoundary && outside))
          targets.insert(v);
      }
    if (targets.empty())
      return;
    // The group's nodes the targets need, and their copies in program order.
    llvm::DenseSet<const Node *> needed;
    std::vector<const Node *> work;
    for (const Value *v : targets)
      work.push_back(v->definingNode());
    while (!work.empty()) {
      const Node *n = work.back();
      work.pop_back();
      if (!needed.insert(n).second)
        continue;
      for (const Value *in : n->inputs())
        if (const Node *def = in ? in->definingNode() : nullptr; def && group.count(def))
          work.push_back(def);
    }
    llvm::DenseMap<const Value *, Value *> copyOf;
    for (const Node *n : nodes) {
      if (!needed.count(n))
        continue;
      std::vector<Value *> ins;
      for (Value *in : n->inputs())
        ins.push_back(in && copyOf.count(in) ? copyOf[in] : in);
      Node *c = g.cloneNode(*n, ins, ".recomputed");
      c->setAttr(kProgramAttr, Attribute::ofString(optimizer_io::kBackward));
      for (size_t i = 0; i < n->numOutputs(); ++i)
        copyOf[n->output(i)] = c->output(i);
    }
    for (const Value *v : targets) {
      std::vector<Node *> readers(v->users().begin(), v->users().end());
      for (Node *u : readers)
        if (inBackward(*u))
          for (size_t i = 0; i < u->numInputs(); ++i)
            if (u->input(i) == v)
              u->setInput(i, copyOf[v]);
    }
  }

  PassOption<std::string> mode_{this, "mode", "full",
                                "what to recompute: full (each layer), selective (each attention core) or none",
                                oneOf({"none", "full", "selective"})};
};

} // namespace

PassInfo recomputePass() {
  return {"recompute", "Recompute activations in the backward instead of saving them (Megatron's full, selective)",
          "After autodiff: mode=full copies each layer's forward (a numbered module path, or else a block of the "
          "run the forward repeats, joined to the next by one value) into the backward for the values the backward "
          "reads that only the layer reads in the forward, computed from the layer's inputs (which stay saved); "
          "mode=selective does so for each attention core (the scores product, its scaling and mask, the "
          "softmax) from Q and K. The copies are backward nodes; the results are the same operations.",
          [] { return std::make_unique<Recompute>(); }};
}

} // namespace partita
