//===- InsertCollectives.cpp - insert-collectives pass --------------------===//
//
// Lowers every partita.Reshard to the steps the ReshardPlanner picks.
//
//   %r = partita.Reshard(%p) : f32[8,512] {R,R}         (%p partial(tp))
//     →  %r = partita.AllReduce(%p) {axis = "tp"} : f32[8,512] {R,R}
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"
#include "passes/sharding/ReshardPlanner.h"

namespace partita {

namespace {
class InsertCollectives : public Pass {
public:
  llvm::StringRef name() const override { return "insert-collectives"; }
  llvm::Error run(Graph &g) override {
    if (g.mesh.empty())
      return passError(name(), "the graph has no mesh");
    std::string axis = g.mesh.axes.back().name;
    for (Node *n : g.nodes()) {
      if (!n->is("Reshard", "partita"))
        continue;
      Value *in = n->input(0), *out = n->output();
      Layout from = layoutOf(in, axis), to = layoutOf(out, axis);
      auto steps = planReshard(from, to);
      if (!steps)
        return passError(name(), "node " + n->describe() + ": " + llvm::toString(steps.takeError()));
      Value *v = in;
      Layout current = from;
      for (size_t i = 0; i < steps->size(); ++i) {
        const ReshardStep &s = (*steps)[i];
        current = s.kind == CollectiveKind::ShardSlice || s.kind == CollectiveKind::ReduceScatter
                      ? Layout::split(s.dim, s.outer)
                      : Layout::replicated();
        bool lastStep = i + 1 == steps->size();
        v = makeCollective(g, s, v, axis, current, lastStep ? out->name() : in->name() + ".gathered");
      }
      g.replaceAllUsesWith(out, v, /*takeName=*/true);
      g.eraseNode(n);
    }
    return llvm::Error::success();
  }
};
} // namespace

PassInfo insertCollectivesPass() {
  return {"insert-collectives", "Lower partita.Reshard to collectives",
          "Replaces each partita.Reshard by all-reduce, all-gather, reduce-scatter or a local "
          "slice, as the ReshardPlanner chooses.",
          "", [] { return std::make_unique<InsertCollectives>(); }};
}

} // namespace partita
