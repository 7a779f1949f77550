//===- DataParallel.cpp - data-parallel pass ------------------------------===//
//
// Data parallelism as a sharding: the graph's batch is split over the mesh
// axis `axis` (dp). The model as exported computes one replica's batch B (the
// per-replica micro-batch, Megatron's --micro-batch-size); this pass makes the
// global graph compute dp x B and splits it:
//
//  1. Inputs whose leading dimension is the batch (that of the first input,
//     the token ids) are S(dp) on it; the others stay replicated, as do the
//     optimizer's inputs (add-optimizer's: read only by its programs).
//  2. propagate-sharding along dp carries the split through every op by its
//     rule, on the graph as exported (sizes of one part, so a batch of 1 still
//     splits). On a dimension tensor parallelism splits too (sequence
//     parallelism's [B*T] rows) the batch split is the major one: tp's
//     collectives and slices work inside each replica's block. Values
//     reduced over the batch come out partial over dp: the loss's token
//     sums and counts, and every weight gradient; graph outputs
//     are made replicated (a gradient: its weight's layout), which records an
//     all-reduce over dp for each (insert-collectives lowers them).
//  3. Every value split over dp has that dimension scaled by dp, and Reshape
//     and Expand targets follow their (scaled) results. A replicated value
//     with a batch-sized dimension that must be split (a constant made for
//     the exported batch) is repeated dp times first, so each replica reads
//     the original. The verifier then checks every type against inference:
//     an op that mixes the batch with other dimensions in a way no rule
//     carries is an error naming the node.
//
//   %x = input : i64[2,16] {R,R}     (dp = 2)
//     →  %x : i64[4,16] {S(dp),R}   %h : f32[4,16,64] {S(dp),R,R}
//        %grad.w = partita.Reshard(%grad.w.p) : f32[64,64] {R,R}   (partial(dp) before)
//===----------------------------------------------------------------------===//
#include "compiler/ops/OpRegistry.h"
#include "compiler/ir/Verifier.h"
#include "compiler/pass/PassManager.h"
#include "passes/AddOptimizer.h"
#include "passes/Passes.h"
#include "passes/sharding/Layout.h"
#include "llvm/ADT/DenseSet.h"

namespace partita {

namespace {

class DataParallel : public Pass {
public:
  llvm::StringRef name() const override { return "data-parallel"; }

  llvm::Error run(Graph &g) override {
    MeshAxis *axis = nullptr;
    for (MeshAxis &a : g.mesh.axes)
      if (a.name == axis_.value())
        axis = &a;
    if (!axis)
      return passError(name(), "axis '" + axis_.value() + "' is not in " +
                                   (g.mesh.empty() ? "the graph (no mesh)" : g.mesh.str()));
    const int64_t parts = axis->size;
    if (g.inputs().empty() || g.inputs()[0]->type().rank() == 0)
      return passError(name(), "the graph's first input has no batch dimension to split over " + axis_.value());
    const int64_t batch = g.inputs()[0]->type().shape[0];
    for (Value *in : g.inputs())
      if (in->type().rank() >= 1 && in->type().shape[0] == batch && !optimizer_io::readOnlyByOptimizer(*in))
        setLayout(in, axis_.value(), Layout::split(0));

    // 2. Propagate on the graph as exported: one part per rank's batch.
    axis->size = 1;
    PassManager pm;
    std::string opts = "propagate-sharding{axis=" + axis_.value() + ",sharded-outputs=1,major=1}";
    llvm::Error err = pm.addPipeline(opts);
    if (!err)
      err = pm.run(g);
    axis->size = parts;
    if (err)
      return err;

    if (auto err = checkSupported(g))
      return err;

    // 3. Scale the split dimensions (a collective or reshard keeps its
    // operand's global shape: a batch gathered for a graph output is whole).
    llvm::DenseSet<const Value *> scaled;
    auto scale = [&](Value *v) {
      Layout l = layoutOf(v, axis_.value());
      if (l.dim < 0)
        return;
      v->type().shape[l.dim] *= parts;
      scaled.insert(v);
    };
    for (Value *in : g.inputs())
      scale(in);
    for (Node *n : g.nodes())
      for (Value *out : n->outputs()) {
        if (hasTrait(*n, OpTrait::Reshards) && scaled.count(n->input(0)) && !scaled.count(out)) {
          out->type().shape = n->input(0)->type().shape;
          scaled.insert(out);
          continue;
        }
        scale(out);
      }
    for (Node *n : g.nodes()) {
      if ((n->is("Reshape") || n->is("Expand")) && n->numInputs() > 1 && scaled.count(n->output()))
        n->setInput(1, g.createShapeConstant(n->output()->type().shape, n->output()->name() + ".shape"));
      if (n->is("Reshard", "partita") && scaled.count(n->output()) && !scaled.count(n->input(0)))
        if (auto err = repeatForReplicas(g, n, parts))
          return err;
    }
    if (auto err = g.sortTopologically())
      return err;
    if (auto err = verifyGraph(g))
      return passError(name(), "the batch (" + llvm::Twine(batch) + " per replica, the leading dimension of input %" +
                                   g.inputs()[0]->name() + ") cannot be scaled by " + axis_.value() + "=" +
                                   llvm::Twine(parts) + ": " + llvm::toString(std::move(err)) +
                                   " (no sharding rule of that op carries the batch split through it)");
    return llvm::Error::success();
  }

private:
  PassOption<std::string> axis_{this, "axis", mesh_axis::kData, "the data-parallel mesh axis", meshAxisName()};

  /// What the scaling cannot make right, refused before it starts.
  llvm::Error checkSupported(const Graph &g) const {
    for (const Node *n : g.nodes()) {
      // A mean over the batch: autodiff wrote its gradient's 1/count for one
      // replica's batch.
      if (n->is("ReduceMean") && n->input(0)->definingNode() &&
          n->input(0)->definingNode()->is("Reshard", "partita")) {
        Layout l = layoutOf(n->input(0)->definingNode()->input(0), axis_.value());
        std::vector<int64_t> axes = n->intsAttr("axes");
        if (n->numInputs() > 1)
          if (const Tensor *t = constantValue(n->input(1)))
            axes = t->toInts();
        int64_t rank = n->input(0)->type().rank();
        bool reduced = axes.empty();
        for (int64_t a : axes)
          reduced |= (a < 0 ? a + rank : a) == l.dim;
        if (l.dim >= 0 && reduced)
          return passError(name(), "node " + n->describe() + " averages over the batch, which " + axis_.value() +
                                       " splits: its gradient's 1/count was fixed for one replica's batch; write the "
                                       "mean as a sum divided by a count computed in the graph (as add-loss does)");
      }
      // A conversion that adds or removes dp on a dimension another axis
      // splits with an outer factor: the planner's steps would slice dp strided.
      if (n->is("Reshard", "partita")) {
        Layout from = layoutOf(n->input(0), axis_.value()), to = layoutOf(n->output(), axis_.value());
        int64_t d = from.dim >= 0 ? from.dim : to.dim;
        for (const Value *v : {n->input(0), n->output()})
          if (from != to && d >= 0 && v->sharding() && v->sharding()->outerOf(d) != 1)
            return passError(name(), "node " + n->describe() + " would split or gather the batch over " +
                                         axis_.value() + " on dimension " + llvm::Twine(d) +
                                         ", which another axis splits strided (" + v->sharding()->str() +
                                         "); not supported yet");
      }
    }
    return llvm::Error::success();
  }

  /// Whether Expand `e` broadcasts its input along output dimension `dim`.
  static bool broadcastsAlong(const Node &e, int64_t dim) {
    const Shape &in = e.input(0)->type().shape;
    int64_t d = dim - (e.output()->type().rank() - static_cast<int64_t>(in.size()));
    return d < 0 || in[d] == 1;
  }

  /// `n` splits over dp a replicated value whose batch-sized dimension was
  /// made for one replica's batch: its input becomes dp copies along it.
  llvm::Error repeatForReplicas(Graph &g, Node *n, int64_t parts) {
    Value *in = n->input(0);
    Layout want = layoutOf(n->output(), axis_.value());
    if (!layoutOf(in, axis_.value()).isReplicated())
      return passError(name(), "node " + n->describe() + " would split over " + axis_.value() + " a value %" +
                                   in->name() + " that is a partial sum over it; data parallelism cannot scale it");
    // A broadcast (the backward of a sum over the batch expands a scalar to
    // [B, T]) is made at the scaled size instead: each rank expands its block.
    Node *def = in->definingNode();
    // Other axes' splits of the dimension are gathered first: dp copies of
    // each rank's block are not a block of dp copies.
    if (in->sharding() && want.dim < static_cast<int64_t>(in->sharding()->dims.size()) &&
        !in->sharding()->dims[want.dim].empty()) {
      Node *r = g.createNode("Reshard", {in}, {in->name() + ".whole"}, "partita");
      r->output()->type() = in->type();
      Sharding whole = *in->sharding();
      whole.dims[want.dim].clear();
      if (want.dim < static_cast<int64_t>(whole.outer.size()))
        whole.outer[want.dim] = 1;
      r->output()->sharding() = whole;
      in = r->output();
      def = nullptr;
    }
    if (def && def->is("Expand") && broadcastsAlong(*def, want.dim)) {
      Value *target = g.createShapeConstant(n->output()->type().shape, in->name() + ".shape");
      Node *e = g.createNode("Expand", {def->input(0), target}, {in->name() + ".split"});
      e->output()->type() = n->output()->type();
      e->output()->sharding() = n->output()->sharding();
      g.replaceAllUsesWith(n->output(), e->output());
      g.eraseNode(n);
      return llvm::Error::success();
    }
    std::vector<Value *> copies(static_cast<size_t>(parts), in);
    Node *cat = g.createNode("Concat", copies, {in->name() + ".replicas"});
    cat->setAttr("axis", Attribute::ofInt(want.dim));
    cat->output()->type() = in->type();
    cat->output()->type().shape[want.dim] *= parts;
    cat->output()->sharding() = in->sharding();
    n->setInput(0, cat->output());
    return llvm::Error::success();
  }
};

} // namespace

PassInfo dataParallelPass() {
  return {"data-parallel", "Split the batch over the data-parallel mesh axis",
          "Makes the graph compute axis-size times the exported (per-replica) batch: inputs whose leading "
          "dimension is the first input's are split over the axis, the split is propagated by every op's "
          "rule, split dimensions and Reshape/Expand targets are scaled, and values reduced over the batch "
          "(the loss's sums, weight gradients) come out partial over the axis with partita.Reshard nodes to "
          "replicated at the graph outputs (insert-collectives makes them all-reduces). Expects a mesh with "
          "the axis; run it after tensor parallelism's insert-collectives.",
          [] { return std::make_unique<DataParallel>(); }};
}

} // namespace partita
