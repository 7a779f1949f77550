//===- CoalesceCollectives.cpp - coalesce-collectives pass ----------------===//
//
// Groups the all-reduces over one mesh axis whose results only leave the
// program (data parallelism's weight gradients) into buckets of about
// bucket-mb megabytes, in the order the program produces them (XLA's
// all-reduce combiner, DDP's gradient buckets): one partita.AllReduce per
// bucket with every member as an operand, placed right after the last of
// them is computed and marked async = 1, so the runtime starts it there and
// finishes it when its results are read (at the end of the program) while
// the rest of the backward pass runs.
//
//   %g1 = partita.AllReduce(%g1.p) {axis = "dp"}     %g1, %g2 = partita.AllReduce(%g1.p, %g2.p)
//   %g2 = partita.AllReduce(%g2.p) {axis = "dp"}  →      {async = 1, axis = "dp"}
//
// ZeRO-2's reduce-scatters of flat gradients are bucketed the same way (one
// partita.ReduceScatter of several 1-D operands, async; a bucket holds one
// kind), and ZeRO-1/2's all-gathers of the updated parameters' shards in
// buckets of allgather-bucket-mb (DeepSpeed's allgather_bucket_size; one
// partita.AllGather of several 1-D operands: fewer, larger calls for the
// many small biases and norms; not async, the step ends with them).
// All-reduces another node reads (the loss's token counts), reductions by max
// and other axes are left alone. A single all-reduce larger than a bucket is
// a bucket of its own; a bucket never mixes operands of two programs
// (split-programs' tags: the loss is the forward's, the gradients the
// backward's).
//===----------------------------------------------------------------------===//
#include "passes/AddOptimizer.h"
#include "passes/SplitPrograms.h"
#include "passes/Passes.h"
#include "passes/SplitPipeline.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include <algorithm>
#include <map>

namespace partita {

namespace {

class CoalesceCollectives : public Pass {
public:
  llvm::StringRef name() const override { return "coalesce-collectives"; }

  llvm::Error run(Graph &g) override {
    if (auto err = tagPipelineStages(g)) // a bucket stays within a pipeline stage
      return passError(name(), llvm::toString(std::move(err)));
    std::vector<Node *> order = g.nodes();
    // The program each all-reduce runs in (split-programs' rule): a bucket
    // never spans two.
    llvm::DenseMap<const Node *, std::string> program = assignPrograms(g);
    auto programOf = [&](const Node &n) { return program.lookup(&n); };
    std::vector<std::vector<Node *>> buckets;
    size_t bytes = 0;
    for (Node *n : order) {
      if (!candidate(g, *n))
        continue;
      const TensorType &t = n->output()->type();
      size_t size = static_cast<size_t>(numElements(t.shape)) * dtypeSize(t.dtype);
      bool same = !buckets.empty() && buckets.back().front()->output()->type().dtype == t.dtype &&
                  buckets.back().front()->op() == n->op() && programOf(*buckets.back().front()) == programOf(*n) &&
                  producerStage(*buckets.back().front()) == producerStage(*n);
      size_t limit = n->is("AllGather", "partita") ? gatherBucketBytes() : bucketBytes();
      if (buckets.empty() || !same || (bytes > 0 && bytes + size > limit)) {
        buckets.emplace_back();
        bytes = 0;
      }
      buckets.back().push_back(n);
      bytes += size;
    }
    // Each bucket's node takes the place of its last member; an all-gather
    // bucket's readers (candidate()) move right after it.
    std::map<Node *, Node *> placeOf;
    std::map<Node *, std::vector<Node *>> readersAfter;
    llvm::DenseSet<const Node *> moved;
    llvm::DenseMap<const Node *, size_t> position;
    for (size_t i = 0; i < order.size(); ++i)
      position[order[i]] = i;
    for (const auto &members : buckets) {
      bool gather = members.front()->is("AllGather", "partita");
      if (gather && members.size() == 1)
        continue; // a parameter as large as a bucket: gathered as it was, into its result
      std::vector<Value *> operands;
      std::vector<std::string> names;
      for (Node *m : members) {
        operands.push_back(m->input(0));
        names.push_back(m->output()->name() + ".bucket");
      }
      Node *b = g.createNode(members.front()->op(), operands, names, "partita");
      for (const auto &attr : members.front()->attrs())
        b->setAttr(attr.first, attr.second);
      if (!gather)
        b->setAttr("async", Attribute::ofInt(1));
      if (std::string p = programOf(*members.front()); p != kForwardProgram)
        b->setAttr(optimizer_io::kProgramAttr, Attribute::ofString(p));
      if (int64_t stage = producerStage(*members.front()); stage >= 0)
        b->setAttr(kStageAttr, Attribute::ofInt(stage));
      std::vector<Node *> &readers = readersAfter[b];
      for (Node *m : members)
        for (Node *u : m->output()->users())
          if (moved.insert(u).second)
            readers.push_back(u);
      std::sort(readers.begin(), readers.end(), [&](Node *x, Node *y) { return position[x] < position[y]; });
      for (size_t i = 0; i < members.size(); ++i) {
        b->output(i)->type() = members[i]->output()->type();
        b->output(i)->sharding() = members[i]->output()->sharding();
        g.replaceAllUsesWith(members[i]->output(), b->output(i), /*takeName=*/true);
      }
      placeOf[members.back()] = b;
    }
    llvm::DenseSet<const Node *> members;
    for (const auto &bucket : buckets)
      if (placeOf.count(bucket.back()))
        members.insert(bucket.begin(), bucket.end());
    std::vector<Node *> newOrder;
    for (Node *n : order) {
      if (auto it = placeOf.find(n); it != placeOf.end()) {
        newOrder.push_back(it->second);
        const std::vector<Node *> &readers = readersAfter[it->second];
        newOrder.insert(newOrder.end(), readers.begin(), readers.end());
      } else if (!members.count(n) && !moved.count(n))
        newOrder.push_back(n);
    }
    for (const auto &members : buckets)
      if (placeOf.count(members.back()))
        for (Node *m : members)
          g.eraseNode(m);
    g.setOrder(newOrder);
    return llvm::Error::success();
  }

private:
  PassOption<std::string> axis_{this, "axis", mesh_axis::kData, "the mesh axis", meshAxisName()};
  PassOption<double> bucketMb_{this, "bucket-mb", 25, // DDP's default bucket_cap_mb
                               "bucket size in megabytes (0: one all-reduce per result, still async)", atLeast(0.0)};
  PassOption<double> gatherBucketMb_{this, "allgather-bucket-mb", 25, // the same for ZeRO's parameter all-gathers
                                     "the all-gathers' bucket size in megabytes (0: leave them alone)", atLeast(0.0)};
  size_t bucketBytes() const { return static_cast<size_t>(bucketMb_.value() * 1e6); }
  size_t gatherBucketBytes() const { return static_cast<size_t>(gatherBucketMb_.value() * 1e6); }

  /// The pipeline stage of a collective (a bucket never spans two stages;
  /// -1: no pipeline).
  static int64_t producerStage(const Node &n) { return n.intAttr(kStageAttr, -1); }

  /// Whether `v` is a graph output, or read only by nodes of that one operand
  /// whose results are graph outputs read by none (the UnflattenShards of a
  /// ZeRO step): they can follow a bucket placed later than `v`'s producer.
  static bool onlyLeafReaders(const Graph &g, const Value &v) {
    if (v.users().empty())
      return g.isGraphOutput(&v);
    for (const Node *u : v.users()) {
      if (u->numInputs() != 1)
        return false;
      for (const Value *out : u->outputs())
        if (!out->users().empty() || !g.isGraphOutput(out))
          return false;
    }
    return true;
  }

  /// A sum over the axis whose result no node reads (only graph outputs):
  /// an all-reduce, or a reduce-scatter of a 1-D value (ZeRO-2's flat gradients).
  bool candidate(const Graph &g, const Node &n) const {
    if (n.numInputs() != 1 || n.stringAttr("axis", "") != axis_.value())
      return false;
    if (n.is("AllGather", "partita")) // ZeRO-1/2's updated parameters (ZeRO-3's are read by the forward)
      return gatherBucketBytes() > 0 && n.input(0)->type().rank() == 1 && n.intAttr("dim", 0) == 0 &&
             n.intAttr("outer", 1) == 1 && n.intAttr("async", 0) == 0 && onlyLeafReaders(g, *n.output());
    if (!n.output()->users().empty() || !g.isGraphOutput(n.output()))
      return false;
    if (n.is("AllReduce", "partita"))
      return n.stringAttr("reduce", "sum") == "sum";
    return n.is("ReduceScatter", "partita") && n.input(0)->type().rank() == 1 && n.intAttr("dim", 0) == 0 &&
           n.intAttr("outer", 1) == 1;
  }
};

} // namespace

PassInfo coalesceCollectivesPass() {
  return {"coalesce-collectives", "Group output all-reduces, reduce-scatters and all-gathers over an axis into buckets",
          "Replaces the sum all-reduces over `axis` whose results are only graph outputs (weight "
          "gradients under data parallelism) by one multi-operand partita.AllReduce {async = 1} per bucket "
          "of about bucket-mb megabytes, in production order, each placed where its last operand is "
          "computed; likewise 1-D reduce-scatters (ZeRO-2's gradients), and 1-D all-gathers whose results "
          "are only graph outputs (ZeRO-1/2's updated parameters) in blocking buckets of allgather-bucket-mb. "
          "Other collectives are left alone.",
          [] { return std::make_unique<CoalesceCollectives>(); }};
}

} // namespace partita
