//===- ZeroPartition.cpp - zero-partition pass ----------------------------===//
//
// ZeRO (Rajbhandari et al., 2020) as shardings over the data-parallel axis
// of a training graph after data-parallel: each weight's optimizer state
// lives in a flat, padded buffer (compiler/ops/FlatShards.h: one buffer per
// tensor-parallel block of the weight, its length a multiple of dp) that
// dp splits, so each rank keeps and updates 1/dp of it.
//
// Stage 1, per partita.AdamW over weight w (sharding S, tp blocks T):
//   %w.flat   = FlattenShards(%w) {length = L} : [T·L] {S(tp)}  →  S(tp,dp)   (local slice)
//   adam_m.w, adam_v.w : [T·L] {S(tp,dp)}
//   AdamW on the owned part; updated.w = UnflattenShards(all-gather over dp)
// The backward's grad.w is the flat gradient reduce-scattered over dp (each
// rank receives the sum of its own part, which the step reads), marked
// defer = 1: over micro-batches the whole gradient is summed where the
// reduce-scatter stages it and reduced once, at the last (the paper's 2 psi
// a step, like data parallelism's all-reduce). The gradient norm's square
// sums of the parts come out partial over dp; they are added up first and
// all-reduced once.
// Stage 2 also partitions the gradients' memory: its reduce-scatter reduces
// every micro-batch's gradient, and only the parts are summed (in the
// runtime's accumulator).
//
// Stage 3 also partitions the parameters: weight w becomes its owned part
// of the flat buffer (a Weight whose reference is a range of it, so each
// rank's file holds and loads only its part), which the step updates in
// place with no all-gather; each program that reads w all-gathers it over
// dp right before its first use and unflattens it (the forward and the
// backward each their own copy, freed after its last use: the memory plan's
// liveness), and a value the forward computes from gathered weights alone
// (a transposed head) is recomputed in the backward rather than saved:
//   %w = Weight() {name = "fc.w#zero3"} : f32[T·L] {S(tp,dp)}
//   %w.gathered = AllGather(%w) {axis = dp} ; %w.full = UnflattenShards(..)
//
// The pass places its collectives itself (the planner's), each weight's
// next to its update or its gradient, so only one weight's flat copies are
// alive at a time.
//===----------------------------------------------------------------------===//
#include "compiler/ops/OpRegistry.h"
#include "compiler/ir/Verifier.h"
#include "passes/AddOptimizer.h"
#include "passes/PatternMatch.h"
#include "passes/Passes.h"
#include "passes/SplitPrograms.h"
#include "passes/sharding/ReshardPlanner.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/Twine.h"
#include <algorithm>
#include <functional>
#include <map>
#include <optional>

namespace partita {

namespace io = optimizer_io;

namespace {

class ZeroPartition : public Pass {
public:
  llvm::StringRef name() const override { return "zero-partition"; }

  llvm::Error run(Graph &g) override {
    const MeshAxis *axis = g.mesh.find(axis_.value());
    if (!axis)
      return passError(name(), "axis '" + axis_.value() + "' is not in " +
                                   (g.mesh.empty() ? "the graph (no mesh)" : g.mesh.str()));
    mesh_ = g.mesh;
    parts_ = axis->size;
    std::vector<Node *> adams;
    for (Node *n : g.nodes())
      if (n->is("AdamW", "partita"))
        adams.push_back(n);
    if (adams.empty())
      return passError(name(), "the graph has no partita.AdamW node: run add-optimizer first");
    programOf_ = assignPrograms(g);
    for (Node *a : adams)
      if (auto err = stage_ >= 3 && !persists(a->input(3)) ? partitionParameter(g, a) : partition(g, a))
        return err;
    if (auto err = reduceNormOnce(g))
      return err;
    if (stage_ >= 3)
      if (auto err = recomputeWeightValuesInBackward(g))
        return err;
    // Each made node beside its anchor (nullptr: first), in the order made.
    std::vector<Node *> order = before_[nullptr];
    llvm::DenseSet<const Node *> isMade;
    for (auto *lists : {&before_, &after_})
      for (auto &[anchor, nodes] : *lists)
        isMade.insert(nodes.begin(), nodes.end());
    for (Node *n : g.nodes()) {
      if (isMade.count(n))
        continue;
      auto b = before_.find(n), e = after_.find(n);
      if (b != before_.end())
        order.insert(order.end(), b->second.begin(), b->second.end());
      order.push_back(n);
      if (e != after_.end())
        order.insert(order.end(), e->second.begin(), e->second.end());
    }
    if (stage_ >= 3)
      order = gathersBeforeUse(order);
    g.setOrder(order);
    if (auto err = g.sortTopologically())
      return err;
    if (auto err = verifyGraph(g))
      return passError(name(), llvm::toString(std::move(err)));
    return llvm::Error::success();
  }

private:
  PassOption<std::string> axis_{this, "axis", mesh_axis::kData, "the data-parallel mesh axis", meshAxisName()};
  PassOption<int64_t> stage_{this, "stage", 1, "the ZeRO stage", between<int64_t>(1, 3)};
  int64_t parts_ = 1;
  PassOption<int64_t> prefetchElements_{this, "prefetch", -1,
                                        "stage 3's gathered elements in flight ahead of their use (-1: one "
                                        "parameter ahead)",
                                        atLeast<int64_t>(0)};
  PassOption<int64_t> persistBelow_{this, "persist-below", 0, "stage 3 leaves a parameter of fewer elements whole",
                                    atLeast<int64_t>(0)};

  /// Stage 3 leaves a small parameter whole on every rank (stage 2 for it):
  /// its all-gather would cost more in latency than its bytes save. The
  /// whole parameter's elements count, as DeepSpeed's
  /// stage3_param_persistence_threshold counts them.
  bool persists(const Value *w) const { return w->type().numel() < persistBelow_; }
  Mesh mesh_;
  std::vector<Value *> squareSums_; // stage 2: the gradient norm's, partial over dp
  std::vector<Node *> pending_;      // made, not yet placed
  llvm::DenseMap<Node *, std::vector<Node *>> before_, after_;
  llvm::DenseMap<const Node *, std::string> programOf_; // the original nodes'

  /// Stage 3: a partitioned weight and its gathered copies, per program.
  struct Gathered {
    Value *part = nullptr;
    Value *forward = nullptr, *backward = nullptr;
  };
  std::vector<Gathered> gathered_;
  llvm::DenseMap<const Value *, size_t> gatheredIndex_; // a forward copy -> its weight's entry

  /// A weight's flat buffers: FlattenShards' attributes, and the shardings
  /// of a buffer before (`perBlock`, the tp blocks) and after dp splits it.
  struct Flat {
    int64_t dim = 0, blocks = 1, outer = 1, length = 0;
    Sharding perBlock, owned;
    TensorType type;
  };
  llvm::DenseMap<const Value *, Flat> flatOfPart_; // stage 3: a partitioned weight's

  llvm::Expected<Flat> flatOf(const Value *w) const {
    size_t rank = w->type().rank();
    Sharding s = w->sharding() ? *w->sharding() : Sharding::replicated(rank);
    Flat f;
    int64_t split = -1;
    for (size_t d = 0; d < s.dims.size(); ++d) {
      if (s.dims[d].empty())
        continue;
      if (split >= 0)
        return passError(name(), "weight %" + w->name() + " is split on two dimensions (" + s.str() +
                                     "): its shards are not one block each, which flat buffers need");
      split = static_cast<int64_t>(d);
    }
    if (!s.partial.empty())
      return passError(name(), "weight %" + w->name() + " is a partial sum (" + s.str() + ")");
    llvm::SmallVector<std::string, 1> axes;
    if (split >= 0) {
      axes = s.dims[static_cast<size_t>(split)];
      f.dim = split;
      f.outer = s.outerOf(static_cast<size_t>(split));
      for (const std::string &a : axes) {
        if (a == axis_.value())
          return passError(name(),
                           "weight %" + w->name() + " is already split over " + axis_.value() + " (" + s.str() + ")");
        f.blocks *= mesh_.find(a)->size;
      }
    }
    int64_t perBlock = w->type().numel() / f.blocks;
    f.length = (perBlock + parts_ - 1) / parts_ * parts_;
    f.type = TensorType{w->type().dtype, {f.blocks * f.length}, true};
    f.perBlock.dims = {axes};
    f.owned.dims = {axes};
    f.owned.dims[0].push_back(axis_.value());
    return f;
  }

  /// FlattenShards' and UnflattenShards' common attributes: which blocks.
  static void setBlocks(Node *n, const Flat &f) {
    n->setAttr("dim", Attribute::ofInt(f.dim));
    n->setAttr("blocks", Attribute::ofInt(f.blocks));
    if (f.outer != 1)
      n->setAttr("outer", Attribute::ofInt(f.outer));
  }

  Value *flatten(Graph &g, Value *x, const Flat &f, const std::string &program) {
    Node *n = g.createNode("FlattenShards", {x}, {x->name() + ".flat"}, "partita");
    setBlocks(n, f);
    n->setAttr("length", Attribute::ofInt(f.length));
    n->output()->type() = TensorType{x->type().dtype, f.type.shape, true}; // a half gradient stays half
    n->output()->sharding() = f.perBlock;
    if (x->sharding()) // a partial sum stays one (the padding adds zeros)
      n->output()->sharding()->partial = x->sharding()->partial;
    made(n, program);
    return n->output();
  }

  /// `x` converted to sharding `to` by the planner's collectives, made here
  /// (not left to insert-collectives) so they can be placed beside their
  /// operand: a weight's update runs flatten, slice, update, gather,
  /// unflatten before the next weight's, so one weight's flat copies are
  /// alive at a time.
  llvm::Expected<Value *> reshard(Graph &g, Value *x, const Sharding &to, const std::string &nameHint,
                                  const std::string &program) {
    auto v = lowerReshard(g, x, to, nameHint, [&](Node *n) { made(n, program); });
    if (!v)
      return passError(name(), "value %" + x->name() + ": " + llvm::toString(v.takeError()));
    return *v;
  }

  /// Records a node this pass made (placed by place()) and its program.
  void made(Node *n, const std::string &program) {
    if (!program.empty())
      n->setAttr(io::kProgramAttr, Attribute::ofString(program));
    pending_.push_back(n);
  }
  /// Places the nodes made since the last call right before or after `anchor`.
  void place(Node *anchor, bool before) {
    auto &list = before ? before_[anchor] : after_[anchor];
    list.insert(list.end(), pending_.begin(), pending_.end());
    pending_.clear();
  }

  static Sharding shardingOf(const Value *v) {
    return v->sharding() ? *v->sharding() : Sharding::replicated(v->type().rank());
  }
  /// Whether `a` and `b` split the same dimensions over the same axes (partial sums aside).
  static bool splitAlike(const Value *a, const Value *b) {
    Sharding x = shardingOf(a), y = shardingOf(b);
    x.partial.clear();
    y.partial.clear();
    x.dims.resize(a->type().rank());
    y.dims.resize(b->type().rank());
    return x == y;
  }

  /// `v` (of any float type: a half gradient or parameter keeps it) as its rank's part of flat buffer `f`.
  static void retype(Value *v, const Flat &f) {
    v->type() = TensorType{v->type().dtype, f.type.shape, true};
    v->sharding() = f.owned;
  }
  /// AdamW's moments and results become the rank's parts of flat buffers.
  static void retypeState(Node *a, const Flat &f) {
    retype(a->input(5), f);
    retype(a->input(6), f);
    for (Value *out : a->outputs())
      retype(out, f);
  }

  /// The accumulated gradient AdamW `a` reads: its operand, or what that
  /// widens (a half gradient, mixed precision's), or what its copies' sum
  /// reads (replicate-kv-heads' kv head copies).
  static Value *accumulatedOf(Node *a) {
    Value *g = a->input(4);
    Node *d = g->definingNode();
    if (d && d->is("SumCopies", "partita")) {
      g = d->input(0);
      d = g->definingNode();
    }
    return d && d->is("Cast") ? d->input(0) : g;
  }

  /// AdamW's operands as add-optimizer makes them: the gradient and moments are graph inputs.
  llvm::Error checkOperands(Graph &g, Node *a) const {
    if (a->numInputs() < 7)
      return passError(name(), "node " + a->describe() + " has fewer than 7 operands");
    for (size_t i = 4; i < 7; ++i)
      if (!g.isGraphInput(i == 4 ? accumulatedOf(a) : a->input(i)))
        return passError(name(), "node " + a->describe() + ": operand %" + a->input(i)->name() +
                                     " is not a graph input (add-optimizer makes the gradient and moments inputs)");
    return llvm::Error::success();
  }

  /// Mixed precision (half-parameters): AdamW updates the float32 master
  /// copy (a weight of the step) of half parameter `param`, whose new value
  /// is the rounding of AdamW's result (`round`, a Cast).
  struct HalfParameter {
    Value *param;
    Node *round;
  };
  llvm::Expected<std::optional<HalfParameter>> halfParameterOf(Graph &g, Node *a) const {
    Value *m = a->input(3);
    llvm::StringRef p(m->name());
    if (!m->definingNode() || !m->definingNode()->is("Weight") || !p.consume_front(io::master("")))
      return std::nullopt;
    Value *param = g.findValue(p);
    Node *round = nullptr;
    for (Node *u : a->output(0)->users())
      if (u->is("Cast") && g.isGraphOutput(u->output()))
        round = u;
    if (!param || !param->definingNode() || !param->definingNode()->is("Weight") || !round)
      return passError(name(), "node " + a->describe() + " updates master copy %" + m->name() +
                                   ", but the graph has no weight %" + p + " its rounded result updates "
                                   "(half-parameters makes both)");
    return HalfParameter{param, round};
  }

  llvm::Error partition(Graph &g, Node *a) {
    if (auto err = checkOperands(g, a))
      return err;
    Value *w = a->input(3), *grad = accumulatedOf(a);
    auto half = halfParameterOf(g, a);
    if (!half)
      return half.takeError();
    auto flat = flatOf(w);
    if (!flat)
      return flat.takeError();
    const Flat &f = *flat;
    std::string step = a->stringAttr(io::kProgramAttr, "");
    if (*half) { // the master is stored partitioned; the rounded part is gathered in the half type
      Value *param = (*half)->param, *rounded = (*half)->round->output();
      if (auto err = partitionGradient(g, param, grad, f))
        return err;
      retypeState(a, f);
      if (auto err = partitionStorage(g, w, f, "#zero" + std::to_string(stage_)))
        return err;
      retype(rounded, f);
      return gatherUpdate(g, (*half)->round, rounded, param, f, step);
    }
    // The parameter's owned part: a local slice of its flat buffer.
    auto wOwned = reshard(g, flatten(g, w, f, step), f.owned, w->name() + ".owned", step);
    if (!wOwned)
      return wOwned.takeError();
    a->setInput(3, *wOwned);
    place(a, /*before=*/true);
    if (auto err = partitionGradient(g, w, grad, f))
      return err;
    retypeState(a, f);
    return gatherUpdate(g, a, a->output(0), w, f, step);
  }

  /// Every rank's updated part (`updated`, made by `anchor`), gathered into
  /// the whole parameter `w`, which becomes the graph's output.
  llvm::Error gatherUpdate(Graph &g, Node *anchor, Value *updated, const Value *w, const Flat &f,
                           const std::string &step) {
    auto whole = reshard(g, updated, f.perBlock, updated->name() + ".gathered", step);
    if (!whole)
      return whole.takeError();
    Node *u = g.createNode("UnflattenShards", {*whole}, {updated->name() + ".whole"}, "partita");
    setBlocks(u, f);
    u->setAttr("shape", Attribute::ofInts({w->type().shape.begin(), w->type().shape.end()}));
    u->output()->type() = w->type();
    u->output()->sharding() = w->sharding();
    made(u, step);
    place(anchor, /*before=*/false);
    g.replaceGraphOutput(updated, u->output());
    return llvm::Error::success();
  }

  /// Weight `w` becomes its owned part of its flat buffer `f` (a Weight
  /// whose reference is a range of it, under the store's key + `suffix`).
  llvm::Error partitionStorage(Graph &g, Value *w, const Flat &f, const std::string &suffix) {
    Node *wn = w->definingNode();
    if (!wn || !wn->is("Weight"))
      return passError(name(), "%" + w->name() + " is no weight: only stored parameters are partitioned");
    if (f.outer != 1)
      return passError(name(), "weight %" + w->name() + " is split with an outer factor (" + shardingOf(w).str() +
                                   "): a partitioned weight is a range of its stored blocks, which needs "
                                   "each block contiguous");
    std::string key = wn->stringAttr("name", w->name());
    WeightRef ref = g.weights.find(key) ? *g.weights.find(key) : WeightRef{w->type()};
    g.weights.add(key + suffix, ref.flattened(f.dim, f.blocks, f.length));
    wn->setAttr("name", Attribute::ofString(key + suffix));
    retype(w, f);
    return llvm::Error::success();
  }

  /// Stage 2: the backward returns the owned part of w's gradient (its
  /// reduction over dp becomes a reduce-scatter), which the step and the
  /// gradient norm then read.
  llvm::Error partitionGradient(Graph &g, Value *w, Value *accumulated, const Flat &f) {
    Value *out = g.findValue(optimizer_io::gradOutput(w->name()));
    if (!out || !g.isGraphOutput(out))
      return passError(name(), "weight %" + w->name() + " has no gradient output grad." + w->name());
    // Reduce-scatter what the all-reduce over dp would have reduced.
    Value *src = out;
    if (Node *def = out->definingNode(); def && def->is("Reshard", "partita")) {
      const auto &in = def->input(0)->sharding();
      if (in && std::find(in->partial.begin(), in->partial.end(), axis_.value()) != in->partial.end() &&
          splitAlike(def->input(0), out))
        src = def->input(0);
    }
    // The flat buffers are the weight's blocks: the gradient must be split as the weight is.
    if (!splitAlike(src, w))
      return passError(name(), "gradient %" + src->name() + " of weight %" + w->name() + " is laid out " +
                                   shardingOf(src).str() + ", the weight " + shardingOf(w).str() +
                                   ": its flat buffers would not be the weight's blocks");
    std::string backward = out->definingNode() ? out->definingNode()->stringAttr(io::kProgramAttr, io::kBackward)
                                               : io::kBackward;
    auto owned = reshard(g, flatten(g, src, f, backward), f.owned, out->name() + ".owned", backward);
    if (!owned)
      return owned.takeError();
    // Stage 1 keeps whole gradients: each micro-batch's is summed where the
    // reduce-scatter stages it, which reduces once, at the last (2 psi a
    // step, as data parallelism); stage 2 reduces every micro-batch's and
    // keeps only its part.
    if (Node *rs = (*owned)->definingNode(); stage_ == 1 && rs && rs->is("ReduceScatter", "partita"))
      rs->setAttr("defer", Attribute::ofInt(1));
    if (src->definingNode())
      place(src->definingNode(), /*before=*/false); // as soon as the gradient is computed
    else
      place(nullptr, /*before=*/true);
    g.replaceGraphOutput(out, *owned);
    return partitionReaders(accumulated, f);
  }

  /// The optimizer's reads of accumulated gradient `v` (or of its widening,
  /// a Cast): AdamW (as it is) and the gradient norm's square sum, now
  /// partial over dp.
  llvm::Error partitionReaders(Value *v, const Flat &f) {
    retype(v, f);
    std::vector<Node *> users = v->users();
    std::sort(users.begin(), users.end());
    users.erase(std::unique(users.begin(), users.end()), users.end()); // Mul(g, g) reads it twice
    for (Node *u : users) {
      if (u->is("AdamW", "partita"))
        continue;
      if (u->is("Cast") || u->is("SumCopies", "partita")) { // the copies' sum: each holds the same flat part
        if (auto err = partitionReaders(u->output(), f))
          return err;
        continue;
      }
      if (!u->is("Mul") || u->input(0) != v || u->input(1) != v || u->output()->users().size() != 1 ||
          !u->output()->users()[0]->is("ReduceSum"))
        return passError(name(), "node " + u->describe() + " reads the gradient %" + v->name() +
                                     " other than the gradient norm's square sum; it cannot read a partitioned one");
      retype(u->output(), f);
      squareSums_.push_back(u->output()->users()[0]->output());
    }
    return llvm::Error::success();
  }

  /// Stage 3: the weight becomes its owned part of the flat buffer; the
  /// step updates it in place; each program reading it gathers its own copy.
  llvm::Error partitionParameter(Graph &g, Node *a) {
    if (auto err = checkOperands(g, a))
      return err;
    Value *grad = accumulatedOf(a);
    auto half = halfParameterOf(g, a);
    if (!half)
      return half.takeError();
    // Mixed precision partitions the half parameter and its float32 master alike.
    Value *w = *half ? (*half)->param : a->input(3);
    if (!w->definingNode() || !w->definingNode()->is("Weight"))
      return passError(name(), "node " + a->describe() + " updates %" + w->name() +
                                   ", which is no weight: stage 3 partitions stored parameters");
    auto flat = flatOf(w);
    if (!flat)
      return flat.takeError();
    const Flat &f = *flat;
    if (auto err = partitionGradient(g, w, grad, f))
      return err;
    retypeState(a, f);
    if (*half) {
      if (auto err = partitionStorage(g, a->input(3), f, "#zero3"))
        return err;
      retype((*half)->round->output(), f); // the half part, updated in place
    }
    // Its readers, by program, before the weight changes type.
    std::map<std::string, std::vector<Node *>> readers;
    for (Node *u : w->users())
      if (u != a) {
        auto &list = readers[programOf_.lookup(u)];
        if (std::find(list.begin(), list.end(), u) == list.end())
          list.push_back(u);
      }
    TensorType whole = w->type();
    std::optional<Sharding> wholeSharding = w->sharding();
    if (auto err = partitionStorage(g, w, f, "#zero3"))
      return err;
    flatOfPart_[w] = f;
    Gathered entry{w};
    for (auto &[program, users] : readers) {
      if (program != kForwardProgram && program != io::kBackward)
        return passError(name(), "node " + users.front()->describe() + " of program '" + program +
                                     "' reads the parameter %" + w->name() + ", which stage 3 partitions");
      auto full = gather(g, w, whole, wholeSharding, program);
      if (!full)
        return full.takeError();
      for (Node *u : users)
        for (size_t i = 0; i < u->numInputs(); ++i)
          if (u->input(i) == w)
            u->setInput(i, *full);
      place(firstOf(g, users), /*before=*/true);
      (program == io::kBackward ? entry.backward : entry.forward) = *full;
    }
    if (entry.forward)
      gatheredIndex_[entry.forward] = gathered_.size();
    gathered_.push_back(entry);
    return llvm::Error::success();
  }

  /// The whole weight (shape `whole`), all-gathered from its parts and unflattened, in `program`.
  llvm::Expected<Value *> gather(Graph &g, Value *part, const TensorType &whole,
                                 const std::optional<Sharding> &wholeSharding, const std::string &program) {
    const Flat &f = flatOfPart_[part];
    std::string suffix = program == io::kBackward ? ".bwd" : "";
    auto flat = reshard(g, part, f.perBlock, part->name() + ".gathered" + suffix, program);
    if (!flat)
      return flat.takeError();
    Node *u = g.createNode("UnflattenShards", {*flat}, {part->name() + ".full" + suffix}, "partita");
    setBlocks(u, f);
    u->setAttr("shape", Attribute::ofInts({whole.shape.begin(), whole.shape.end()}));
    u->output()->type() = whole;
    u->output()->sharding() = wholeSharding;
    made(u, program);
    return u->output();
  }

  static Node *firstOf(Graph &g, llvm::ArrayRef<Node *> nodes) {
    llvm::SmallPtrSet<const Node *, 8> set(nodes.begin(), nodes.end());
    for (Node *n : g.nodes())
      if (set.count(n))
        return n;
    return nodes.front();
  }

  /// Stage 3: a value the forward computes from gathered weights and
  /// constants alone (a Transpose of a tied table) and the backward reads
  /// would be saved whole; the backward computes it again from its own
  /// gathered copies instead.
  llvm::Error recomputeWeightValuesInBackward(Graph &g) {
    llvm::DenseMap<const Node *, bool> alone;
    llvm::DenseMap<Value *, Value *> copies;
    std::function<llvm::Expected<Value *>(Value *, Node *)> inBackward = [&](Value *v,
                                                                             Node *reader) -> llvm::Expected<Value *> {
      if (auto it = copies.find(v); it != copies.end())
        return it->second;
      Node *d = v->definingNode();
      Value *c = v;
      if (auto it = gatheredIndex_.find(v); it != gatheredIndex_.end()) {
        Gathered &e = gathered_[it->second];
        if (!e.backward) {
          auto full = gather(g, e.part, e.forward->type(), e.forward->sharding(), io::kBackward);
          if (!full)
            return full.takeError();
          e.backward = *full;
          place(reader, /*before=*/true);
        }
        c = e.backward;
      } else if (d && !d->is("Constant") && !d->is("Weight")) {
        std::vector<Value *> ins;
        for (Value *in : d->inputs()) {
          auto copy = in ? inBackward(in, reader) : llvm::Expected<Value *>(nullptr);
          if (!copy)
            return copy.takeError();
          ins.push_back(*copy);
        }
        std::vector<std::string> names;
        for (const Value *out : d->outputs())
          names.push_back(g.uniqueName(out->name() + ".bwd"));
        Node *n = g.createNode(d->op(), ins, names, d->domain());
        for (const auto &[k, attr] : d->attrs())
          n->setAttr(k, attr);
        for (size_t i = 0; i < d->numOutputs(); ++i) {
          n->output(i)->type() = d->output(i)->type();
          n->output(i)->sharding() = d->output(i)->sharding();
          copies[d->output(i)] = n->output(i);
        }
        made(n, io::kBackward);
        place(reader, /*before=*/true);
        c = n->output(static_cast<size_t>(std::find(d->outputs().begin(), d->outputs().end(), v) - d->outputs().begin()));
      }
      copies[v] = c;
      return c;
    };
    std::vector<Node *> nodes;
    for (Node *n : g.nodes()) // the loop below adds nodes
      nodes.push_back(n);
    for (Node *n : nodes) {
      if (programOf(n) != io::kBackward)
        continue;
      for (size_t i = 0; i < n->numInputs(); ++i) {
        Value *in = n->input(i);
        const Node *d = in ? in->definingNode() : nullptr;
        if (d && programOf(d) == kForwardProgram && fromPartsAlone(d, alone)) {
          auto copy = inBackward(in, n);
          if (!copy)
            return copy.takeError();
          n->setInput(i, *copy);
        }
      }
    }
    return llvm::Error::success();
  }

  /// Stage 3: each gathered weight, and what is computed from gathered
  /// weights alone (a Transpose the backward reads), runs right before the
  /// first node that also reads activations, so a program holds one layer's
  /// whole weights at a time (an earlier sort moved weight-only nodes to the
  /// top of their program: they are ready first).
  std::vector<Node *> gathersBeforeUse(const std::vector<Node *> &order) const {
    llvm::DenseMap<const Node *, bool> alone;
    llvm::DenseSet<const Node *> sink;
    for (Node *n : order)
      if (fromPartsAlone(n, alone))
        sink.insert(n);
    std::vector<Node *> out;
    llvm::DenseSet<const Node *> placed;
    std::function<void(Node *)> emit = [&](Node *m) {
      if (!placed.insert(m).second)
        return;
      for (Value *in : m->inputs())
        if (Node *d = in ? in->definingNode() : nullptr; d && sink.count(d))
          emit(d);
      out.push_back(m);
    };
    for (Node *n : order)
      if (!sink.count(n))
        emit(n);
    for (Node *n : order) // read by nothing else
      emit(n);
    return prefetch(out);
  }

  /// Stage 3: each weight's all-gather is async and starts ahead of its
  /// use, where an earlier gather of its program was: with `prefetch`
  /// elements, at the earliest gather after which the gathers up to it hold
  /// no more than that (DeepSpeed's stage3_prefetch_bucket_size; 0: none);
  /// by default one parameter ahead. It runs while the layers before it
  /// compute and waits only where its weight is unflattened.
  std::vector<Node *> prefetch(const std::vector<Node *> &order) const {
    std::map<std::string, std::vector<size_t>> gathersOf; // per program, positions in `order`
    for (size_t i = 0; i < order.size(); ++i)
      if (order[i]->is("AllGather", "partita") && flatOfPart_.count(order[i]->input(0)))
        gathersOf[programOf(order[i])].push_back(i);
    std::vector<std::vector<Node *>> startAfter(order.size());
    llvm::DenseSet<const Node *> moved;
    for (auto &[program, at] : gathersOf)
      for (size_t k = 0; k < at.size(); ++k) {
        order[at[k]]->setAttr("async", Attribute::ofInt(1));
        // Started at gather `from`'s place, gathers from+1..k are ahead of their use there.
        size_t from = k;
        if (prefetchElements_ < 0) {
          from = k > 0 ? k - 1 : 0;
        } else {
          int64_t ahead = 0;
          auto elements = [&](size_t j) { return flatOfPart_.lookup(order[at[j]]->input(0)).length; }; // a rank's block
          while (from > 0 && ahead + elements(from) <= prefetchElements_)
            ahead += elements(from--);
        }
        if (from < k) {
          startAfter[at[from]].push_back(order[at[k]]);
          moved.insert(order[at[k]]);
        }
      }
    std::vector<Node *> out;
    for (size_t i = 0; i < order.size(); ++i) {
      if (!moved.count(order[i]))
        out.push_back(order[i]);
      out.insert(out.end(), startAfter[i].begin(), startAfter[i].end());
    }
    return out;
  }

  /// The program of a node the pass did not make (made ones carry their attribute).
  std::string programOf(const Node *n) const {
    if (auto it = programOf_.find(n); it != programOf_.end())
      return it->second;
    std::string p = n->stringAttr(io::kProgramAttr, "");
    return p.empty() ? kForwardProgram : p;
  }

  /// Stage 3: whether `n` computes from partitioned weights (one at least)
  /// and constants alone: a part's gather and unflatten, a transpose of the
  /// gathered weight. Memoized in `memo`.
  bool fromPartsAlone(const Node *n, llvm::DenseMap<const Node *, bool> &memo) const {
    if (auto it = memo.find(n); it != memo.end())
      return it->second;
    bool part = false, alone = n->numInputs() > 0;
    for (const Value *in : n->inputs()) {
      const Node *d = in ? in->definingNode() : nullptr;
      if (!in)
        continue;
      if (!d) { // a graph input
        alone = false;
        break;
      }
      if (d->is("Weight") && flatOfPart_.count(in))
        part = true;
      else if (hasTrait(*d, OpTrait::Source))
        continue;
      else if (fromPartsAlone(d, memo))
        part = true;
      else {
        alone = false;
        break;
      }
    }
    return memo[n] = alone && part;
  }

  /// Stage 2: the square sums of gradient parts are partial over dp, and so
  /// is every sum of them (Adds, and tp's all-reduces: linear); the norm's
  /// square is all-reduced over dp once, before its square root.
  llvm::Error reduceNormOnce(Graph &g) {
    // The norm, or under a pipeline each stage's (grad_norm.stage<s>).
    llvm::SetVector<Node *> roots; // in output order: the graph comes out the same every run
    for (Value *out : g.outputs())
      if (io::isNorm(out->name()))
        if (Node *def = out->definingNode(); def && def->is("Sqrt"))
          roots.insert(def);
    if (roots.empty())
      return passError(name(), "the graph has no gradient norm output " + std::string(io::kNorm) +
                                   " = Sqrt(sum of squares) (add-optimizer's)");
    std::vector<Value *> work = squareSums_;
    llvm::SmallPtrSet<Value *, 32> seen;
    while (!work.empty()) {
      Value *v = work.back();
      work.pop_back();
      if (!seen.insert(v).second)
        continue;
      if (!v->sharding())
        v->sharding() = Sharding::replicated(v->type().rank());
      if (std::find(v->sharding()->partial.begin(), v->sharding()->partial.end(), axis_.value()) ==
          v->sharding()->partial.end())
        v->sharding()->partial.push_back(axis_.value());
      for (Node *u : v->users()) {
        if (roots.count(u))
          continue;
        // A kv head's copies count once: their square sum times a constant 1/copies.
        bool scaled = u->is("Mul") && (scalarConstant(u->input(0)) || scalarConstant(u->input(1)));
        bool linear =
            u->is("Add") || scaled || (u->is("AllReduce", "partita") && u->stringAttr("reduce", "sum") == "sum");
        if (!linear)
          return passError(name(), "node " + u->describe() + " reads a sum of squared gradients and is not a sum: "
                                   "the gradient norm of partitioned gradients is summed, then all-reduced");
        work.push_back(u->output());
      }
    }
    for (Node *root : roots) {
      Value *total = root->input(0);
      auto dp = total->sharding()
                    ? std::find(total->sharding()->partial.begin(), total->sharding()->partial.end(), axis_.value())
                    : nullptr;
      if (!dp || dp == total->sharding()->partial.end())
        return passError(name(), "the gradient norm's sum of squares %" + total->name() +
                                     " is not reached from the partitioned gradients' square sums");
      Sharding whole = *total->sharding();
      whole.partial.erase(whole.partial.begin() + (dp - total->sharding()->partial.begin()));
      auto reduced = reshard(g, total, whole, total->name() + ".reduced", io::kGradNorm);
      if (!reduced)
        return reduced.takeError();
      root->setInput(0, *reduced);
      place(root, /*before=*/true);
    }
    return llvm::Error::success();
  }
};

} // namespace

PassInfo zeroPartitionPass() {
  return {"zero-partition",
          "Partition AdamW's state (ZeRO-1), the gradients (ZeRO-2) and the parameters (ZeRO-3) over data parallelism",
          "Per partita.AdamW: the moments become flat buffers (one per tensor-parallel block of the weight, padded to "
          "a multiple of the axis size) split over the axis; the step updates each rank's part of the flattened "
          "weight and all-gathers the updated weight; the backward's grad.<w> is the rank's part of the flat "
          "gradient (its all-reduce becomes a reduce-scatter), which stage 1 defers to the last micro-batch "
          "(defer = 1) and stage 2 runs every micro-batch. stage=3 also keeps each weight as its rank's part of the "
          "flat buffer, updated in place, all-gathered before its first use in the forward and in the backward. Run "
          "after data-parallel, before insert-collectives.",
          [] { return std::make_unique<ZeroPartition>(); }};
}

} // namespace partita
