//===- PropagateSharding.cpp - propagate-sharding pass --------------------===//
//
// Gives every value a sharding along the mesh's tensor-parallel axis. Walking
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
//===----------------------------------------------------------------------===//
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
    const MeshAxis *axis = g.mesh.empty() ? nullptr : &g.mesh.axes.back();
    if (!axis)
      return passError(name(), "the graph has no mesh; run annotate-megatron first");
    std::string ax = axis->name;
    int64_t parts = axis->size;
    std::map<std::pair<const Value *, std::string>, Value *> reshards;
    auto reshard = [&](Value *v, const Layout &to) -> Value * {
      auto key = std::make_pair(static_cast<const Value *>(v), to.str());
      if (Value *done = reshards[key])
        return done;
      Node *r = g.createNode("Reshard", {v}, {v->name() + ".reshard"}, "partita");
      r->output()->type() = v->type();
      setLayout(r->output(), ax, to);
      return reshards[key] = r->output();
    };

    for (Value *in : g.inputs()) // replicated unless the IR says otherwise
      setLayout(in, ax, layoutOf(in, ax));
    for (Node *n : g.nodes()) {
      if (n->is("Weight") || n->is("Constant")) {
        setLayout(n->output(), ax, layoutOf(n->output(), ax));
        continue;
      }
      std::vector<Layout> actual;
      for (Value *in : n->inputs())
        actual.push_back(layoutOf(in, ax));
      RuleResult r = forwardLayouts(*n, actual, parts);
      for (size_t i = 0; i < n->numInputs(); ++i)
        if (n->input(i) && r.operands[i] != actual[i])
          n->setInput(i, reshard(n->input(i), r.operands[i]));
      for (size_t i = 0; i < n->numOutputs(); ++i)
        setLayout(n->output(i), ax, i < r.results.size() ? r.results[i] : Layout::replicated());
    }
    std::vector<Value *> outs = g.outputs();
    for (Value *out : outs)
      if (!layoutOf(out, ax).isReplicated())
        g.replaceGraphOutput(out, reshard(out, Layout::replicated()));
    return llvm::Error::success();
  }
};

} // namespace

PassInfo propagateShardingPass() {
  return {"propagate-sharding", "Derive every value's sharding from the seeded weights",
          "Applies each op's forward sharding rule in program order and records needed layout "
          "changes as partita.Reshard nodes. Expects a mesh (annotate-megatron).",
          "", [] { return std::make_unique<PropagateSharding>(); }};
}

} // namespace partita
