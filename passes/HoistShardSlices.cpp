//===- HoistShardSlices.cpp - hoist-shard-slices pass ---------------------===//
//
// A local slice (partita.ShardSlice) of a value computed replicated only to
// be cut is moved above the op that computed it, when that op's backward
// sharding rule says it can produce the split result from split (or
// replicated) operands without communication:
//
//   %e = Expand(%d, %shape) : f32[4,128,50304] {R,R,R}      (%d : f32[4,128,1])
//   %s = partita.ShardSlice(%e) {dim = 2} : ... {R,R,S(tp)}
// becomes
//   %s = Expand(%d, %shape) : f32[4,128,50304] {R,R,S(tp)}
//
// so each rank computes only its block (the vocabulary-parallel loss's
// backward would otherwise expand and one-hot encode the whole vocabulary on
// every rank). Operands that must be split get their own ShardSlice, which
// may move up in turn; slices of constants are left to localize.
//===----------------------------------------------------------------------===//
#include "compiler/plan/Names.h"
#include "compiler/ops/OpRegistry.h"
#include "passes/Passes.h"
#include "passes/sharding/ReshardPlanner.h"
#include "passes/sharding/ShardingRules.h"

namespace partita {

namespace {

class HoistShardSlices : public Pass {
public:
  llvm::StringRef name() const override { return "hoist-shard-slices"; }

  llvm::Error run(Graph &g) override {
    if (g.mesh.empty())
      return llvm::Error::success();
    const MeshAxis *meshAxis = g.mesh.find(axis_.value());
    if (!meshAxis)
      return passError(name(), "axis '" + axis_.value() + "' is not in " + g.mesh.str());
    std::string axis = meshAxis->name;
    int64_t parts = meshAxis->size;
    bool any = false;
    for (bool changed = true; changed;) {
      changed = false;
      for (Node *s : g.nodes())
        if (s->is("ShardSlice", "partita") && s->stringAttr("axis", "") == axis && hoist(g, s, axis, parts)) {
          changed = any = true;
          break; // the node list changed
        }
    }
    return any ? g.sortTopologically() : llvm::Error::success(); // new slices were appended
  }

private:
  PassOption<std::string> axis_{this, "axis", mesh_axis::kTensor, "the mesh axis whose slices to hoist", meshAxisName()};

  /// `u` sliced to `need`: an existing slice of it, or a new one.
  static Value *sliceOf(Graph &g, Value *u, const Layout &need, const std::string &axis) {
    for (Node *user : u->users())
      if (user->is("ShardSlice", "partita") && layoutOf(user->output(), axis) == need)
        return user->output();
    return makeCollective(g, ReshardStep{CollectiveKind::ShardSlice, need.dim, need.outer}, u, axis, need, u->name() + ".shard");
  }

  /// Moves slice `s` above its operand's producer; false when it cannot.
  bool hoist(Graph &g, Node *s, const std::string &axis, int64_t parts) {
    Value *v = s->input(0);
    Node *p = v->definingNode();
    if (!p || p->numOutputs() != 1 || v->users().size() != 1 || g.isGraphOutput(v) ||
        hasTrait(*p, OpTrait::Source) || p->domain() == "partita")
      return false;
    Layout want = layoutOf(s->output(), axis);
    if (want.dim < 0 || !layoutOf(v, axis).isReplicated())
      return false;
    std::string why;
    auto operands = backwardLayouts(*p, 0, want, parts, why);
    if (!operands)
      return false;
    // Every operand must already have its layout, or be replicated and need a split.
    for (size_t i = 0; i < p->numInputs(); ++i) {
      const Value *u = p->input(i);
      Layout need = i < operands->size() ? (*operands)[i] : Layout::replicated();
      Layout have = layoutOf(u, axis);
      if (u && have != need && !(have.isReplicated() && need.dim >= 0))
        return false;
    }
    for (size_t i = 0; i < p->numInputs(); ++i) {
      Value *u = p->input(i);
      Layout need = i < operands->size() ? (*operands)[i] : Layout::replicated();
      if (u && layoutOf(u, axis) != need)
        p->setInput(i, sliceOf(g, u, need, axis));
    }
    setLayout(v, axis, want);
    g.replaceAllUsesWith(s->output(), v, /*takeName=*/true);
    g.eraseNode(s);
    return true;
  }
};

} // namespace

PassInfo hoistShardSlicesPass() {
  return {"hoist-shard-slices", "Move local slices above the ops that computed the whole value",
          "A partita.ShardSlice of a replicated result moves above its producer when the producer's "
          "sharding rule can make the split result from split or replicated operands, so each rank "
          "computes only its block. Works along one mesh axis.",
          [] { return std::make_unique<HoistShardSlices>(); }};
}

} // namespace partita
