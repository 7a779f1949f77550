//===- InsertCollectives.cpp - insert-collectives pass --------------------===//
//
// Lowers every partita.Reshard to the steps the ReshardPlanner picks. The axes
// come from the shardings: each step communicates over the axis on which its
// operand and result differ (a Reshard over tp of a value also S(dp) stays S(dp)).
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
    for (Node *n : g.nodes()) {
      if (!n->is("Reshard", "partita"))
        continue;
      Value *in = n->input(0), *out = n->output();
      size_t rank = in->type().shape.size();
      auto v = lowerReshard(g, in, out->sharding() ? *out->sharding() : Sharding::replicated(rank), out->name());
      if (!v)
        return passError(name(), "node " + n->describe() + ": " + llvm::toString(v.takeError()));
      g.replaceAllUsesWith(out, *v, /*takeName=*/true);
      g.eraseNode(n);
    }
    return llvm::Error::success();
  }
};
} // namespace

PassInfo insertCollectivesPass() {
  return {"insert-collectives", "Lower partita.Reshard to collectives",
          "Replaces each partita.Reshard by all-reduce, all-gather, reduce-scatter or a local "
          "slice, as the ReshardPlanner chooses, over the mesh axes on which its operand's and "
          "result's shardings differ.",
          [] { return std::make_unique<InsertCollectives>(); }};
}

} // namespace partita
