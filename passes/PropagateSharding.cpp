//===- PropagateSharding.cpp - propagate-sharding pass --------------------===//
//
// Gives every value a sharding along one mesh axis (option axis, tp by
// default; the other axes' shardings are left as they are). Walking
// the graph in order, each node's forward rule takes the layouts its operands
// arrive with and says what it needs them in and what it produces; where an
// operand arrives in another layout, a partita.Reshard node records the
// conversion (insert-collectives turns it into communication). Weights and
// constants keep the layout annotate seeded (replicated otherwise); graph
// inputs keep theirs (replicated by default) and graph outputs are made replicated.
//
//   %h = partita.Linear(%x, %w, %b) : f32[2,8,64] {R,R,S(tp)}
//   %p = MatMul(%h, %w2) : f32[2,8,32] {R,R,R} partial(tp)
//   %y = Add(%p, %b2) ...   →   %r = partita.Reshard(%p) : f32[2,8,32] {R,R,R}
//                                %y = Add(%r, %b2)
//
// With sequence-parallel=1 (Megatron's sequence parallelism), elementwise ops
// and normalisations that would otherwise run replicated on a reduced partial
// sum, or on a value already split along a token dimension, run split along
// it instead: the reduction becomes a reduce-scatter, LayerNorm/residual/
// dropout regions hold 1/tp of the tokens, and the column-parallel
// projections that need the full sequence get an all-gather.
//===----------------------------------------------------------------------===//
#include "compiler/plan/Names.h"
#include "compiler/ops/OpRegistry.h"
#include "passes/Passes.h"
#include "passes/sharding/ShardingRules.h"
#include "llvm/ADT/DenseMap.h"
#include <map>

namespace partita {

namespace {

class PropagateSharding : public Pass {
public:
  llvm::StringRef name() const override { return "propagate-sharding"; }

  llvm::Error run(Graph &g) override {
    if (g.mesh.empty())
      return passError(name(), "the graph has no mesh; run annotate-megatron first");
    const MeshAxis *axis = g.mesh.find(axis_.value());
    if (!axis)
      return passError(name(), "axis '" + axis_.value() + "' is not in " + g.mesh.str());
    std::string ax = axis->name;
    int64_t parts = axis->size;
    std::map<std::pair<const Value *, std::string>, Value *> reshards;
    auto reshard = [&](Value *v, const Layout &to) -> Value * {
      auto key = std::make_pair(static_cast<const Value *>(v), to.str());
      if (Value *done = reshards[key])
        return done;
      Node *r = g.createNode("Reshard", {v}, {v->name() + ".reshard"}, "partita");
      r->output()->type() = v->type();
      r->output()->sharding() = v->sharding(); // other axes unchanged
      setLayout(r->output(), ax, to, major_);
      return reshards[key] = r->output();
    };

    for (Value *in : g.inputs()) // replicated unless the IR says otherwise
      setLayout(in, ax, layoutOf(in, ax), major_);
    for (Node *n : g.nodes()) {
      if (hasTrait(*n, OpTrait::Source)) {
        setLayout(n->output(), ax, layoutOf(n->output(), ax), major_);
        continue;
      }
      std::vector<Layout> actual;
      for (size_t i = 0; i < n->numInputs(); ++i) {
        Value *in = n->input(i);
        // A partial sum read by several nodes is reduced once, where it is
        // made, rather than carried through each reader into several
        // reductions (Megatron's single backward all-reduce).
        if (in && layoutOf(in, ax).partial && in->users().size() > 1) {
          n->setInput(i, reshard(in, Layout::replicated()));
          in = n->input(i);
        }
        actual.push_back(layoutOf(in, ax));
      }
      RuleResult r = forwardLayouts(*n, actual, parts);
      if (sequenceParallel_)
        if (auto err = preferTokenSplit(*n, actual, parts, ax, r))
          return err;
      for (size_t i = 0; i < n->numInputs(); ++i)
        if (n->input(i) && r.operands[i] != actual[i])
          n->setInput(i, reshard(n->input(i), r.operands[i]));
      for (size_t i = 0; i < n->numOutputs(); ++i)
        setLayout(n->output(i), ax, i < r.results.size() ? r.results[i] : Layout::replicated(), major_);
    }
    // Outputs are made replicated, except, with sharded-outputs=1 (training),
    // weight gradients and the optimizer's updates.
    // A gradient output (grad.<weight>) takes its weight's layout, so each
    // rank gets the gradient of exactly the shard it updates; an updated
    // weight or moment (partita.AdamW's) stays laid out as the weight.
    std::vector<Value *> outs = g.outputs();
    for (Value *out : outs) {
      Layout l = layoutOf(out, ax), want = Layout::replicated();
      llvm::StringRef name(out->name());
      if (shardedOutputs_ && name.consume_front(optimizer_io::kGradPrefix))
        if (const Value *w = g.findValue(name); w && w->definingNode() && w->definingNode()->is("Weight"))
          want = layoutOf(w, ax);
      if (shardedOutputs_ && out->definingNode() && out->definingNode()->is("AdamW", "partita") && !l.partial)
        want = l;
      // A half parameter's update (half-parameters: a Cast of AdamW's) is laid out as the parameter.
      if (llvm::StringRef p(out->name()); shardedOutputs_ && p.consume_front("updated."))
        if (const Value *w = g.findValue(p); w && w->definingNode() && w->definingNode()->is("Weight"))
          want = layoutOf(w, ax);
      if (l != want)
        g.replaceGraphOutput(out, reshard(out, want));
    }
    return llvm::Error::success();
  }

private:
  PassOption<std::string> axis_{this, "axis", mesh_axis::kTensor, "the mesh axis to propagate along", meshAxisName()};
  PassOption<bool> sequenceParallel_{this, "sequence-parallel", false,
                                     "split LayerNorm/residual regions along the tokens"};
  PassOption<bool> shardedOutputs_{this, "sharded-outputs", false,
                                   "keep split graph outputs split (gradients of sharded weights)"};
  PassOption<bool> major_{this, "major", false,
                          "on a dimension other axes split too, this axis splits it major-most (data parallelism)"};

  /// A token dimension of an activation [.., tokens, features]: the one before
  /// the features if it divides, else the first that does. `lastToo`: an
  /// elementwise op's value of rank 2 may be split on its last dimension as
  /// well: it is a loss's per-token terms, [batch, tokens], the features
  /// reduced away (with a batch of one, only the tokens divide). Activations
  /// with features keep the error below; a normalisation never splits the
  /// dimension it normalises.
  static int64_t tokenDim(const Value *v, int64_t parts, bool lastToo) {
    const Shape &s = v->type().shape;
    int64_t rank = static_cast<int64_t>(s.size());
    if (rank < 2 || !isFloat(v->type().dtype))
      return -1;
    if (s[rank - 2] % parts == 0)
      return rank - 2;
    for (int64_t d = 0; d < rank - (lastToo && rank == 2 ? 0 : 1); ++d)
      if (s[d] % parts == 0)
        return d;
    return -1;
  }

  /// Sequence parallelism: re-run the rule of an elementwise op or a
  /// normalisation with its operands split along the token dimension when it
  /// would otherwise compute replicated from a partial sum or a token split.
  /// A reduced activation none of whose token dimensions divides is an error:
  /// silently running it replicated would drop sequence parallelism.
  llvm::Error preferTokenSplit(const Node &n, const std::vector<Layout> &actual, int64_t parts,
                               llvm::StringRef ax, RuleResult &r) const {
    bool tokenWise = hasTrait(n, OpTrait::Elementwise) || hasTrait(n, OpTrait::Normalizes);
    if (!tokenWise || n.numOutputs() == 0 || r.results.empty() || !r.results[0].isReplicated())
      return llvm::Error::success();
    bool fromReduction = false;
    int64_t d = tokenDim(n.output(), parts, !hasTrait(n, OpTrait::Normalizes));
    for (size_t i = 0; i < actual.size(); ++i)
      fromReduction |= actual[i].partial || (d >= 0 && actual[i].dim == d);
    if (fromReduction && d < 0 && n.output()->type().rank() >= 2 && isFloat(n.output()->type().dtype)) {
      const Value *partial = nullptr;
      for (size_t i = 0; i < actual.size() && !partial; ++i)
        if (actual[i].partial && n.input(i)->type().rank() >= 2)
          partial = n.input(i);
      if (!partial)
        partial = n.output();
      const Shape &s = partial->type().shape;
      int64_t seq = static_cast<int64_t>(s.size()) - 2;
      return passError(name(), "sequence-parallel: the sequence dimension " + llvm::Twine(seq) + " (size " +
                                   llvm::Twine(s[seq]) + ") of value %" + partial->name() + " (" +
                                   partial->type().str() + ", reduced for " + n.describe() +
                                   ") does not divide by " + ax + "=" + llvm::Twine(parts) +
                                   ", nor does any other token dimension; use a sequence length that is a "
                                   "multiple of " + llvm::Twine(parts) +
                                   " or drop sequence-parallel=1 (--sequence-parallel)");
    }
    if (!fromReduction || d < 0)
      return llvm::Error::success();
    std::vector<Layout> split(actual.size(), Layout::replicated());
    int64_t outRank = n.output()->type().rank();
    for (size_t i = 0; i < actual.size(); ++i) {
      const Value *in = n.input(i);
      int64_t di = in ? d - (outRank - in->type().rank()) : -1;
      if (in && di >= 0 && in->type().shape[di] == n.output()->type().shape[d])
        split[i] = Layout::split(di);
    }
    RuleResult alt = forwardLayouts(n, split, parts);
    if (!alt.results.empty() && alt.results[0] == Layout::split(d))
      r = alt;
    return llvm::Error::success();
  }
};

} // namespace

PassInfo propagateShardingPass() {
  return {"propagate-sharding", "Derive every value's sharding from the seeded weights",
          "Applies each op's forward sharding rule in program order and records needed layout "
          "changes as partita.Reshard nodes, along one mesh axis. Expects a mesh (annotate-megatron).",
          [] { return std::make_unique<PropagateSharding>(); }};
}

} // namespace partita
