//===- ReplicateKvHeads.cpp - replicate-kv-heads pass ---------------------===//
//
// Grouped-query attention with fewer key/value heads G than tensor-parallel
// ranks (LLaMA-70B's 8 at tp 16): each rank's query heads read one kv head,
// which tp/G consecutive ranks share. Megatron-LM refuses the layout; vLLM
// replicates each kv head on the ranks that read it. So does this pass, before
// autodiff, on the graph's math:
//
//   k = Linear(h, Wk[D, G hd]) -> .. [B, G, T, hd] -> Unsqueeze -> Expand [B, G, n, T, hd]
//     -> Reshape [B, G n, T, hd]                          (LLaMA's repeat_kv, n = H / G)
// becomes
//   k = Linear(h, Wk'[D, tp hd]) -> .. [B, tp, T, hd] -> Unsqueeze -> Expand [B, tp, H/tp, T, hd]
//     -> Reshape [B, H, T, hd]
//
// where Wk' repeats each kv head's hd columns tp/G times (a view of Wk by
// reference, WeightRef::Repeat: no bytes are copied). The ops between the
// projection and the Expand (rotary embedding, transposes) carry the head
// dimension, found by their sharding rules, and only its size changes. The
// result is the same function, and annotate-megatron splits Wk' over tp like
// any column-parallel projection: rank r holds kv head r / (tp/G), computes
// only it, and its query heads read it. The copies are one parameter: the
// Weight node's attribute kv_copies = tp/G makes add-optimizer sum the copies'
// gradients over the ranks that hold them (partita.SumCopies, an all-reduce
// over groups of tp/G ranks) and count them once in the gradient norm.
//
// Multi-query attention (one kv head broadcast in the attention matmuls) and
// chains this pass cannot follow are left to annotate-megatron, which
// replicates those kv projections whole over tp.
//===----------------------------------------------------------------------===//
#include "compiler/ops/OpRegistry.h"
#include "passes/PatternMatch.h"
#include "passes/Passes.h"
#include "passes/sharding/ShardingRules.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

namespace partita {

namespace {

/// One repeat of grouped kv heads to the query heads.
struct Repeat {
  Node *expand, *merge; // the Expand and the Reshape merging groups x copies into heads
  int64_t headDim;      // of the Expand's output: [.., G, n, ..] at headDim, headDim + 1
};

/// An Expand that copies [.., G, 1, ..] to [.., G, n, ..], read only by a
/// Reshape merging those two dims into G n heads.
std::optional<Repeat> kvRepeat(Graph &g, Node *e) {
  if (!e->is("Expand") || !singleUser(g, e->output()))
    return std::nullopt;
  const Shape &in = e->input(0)->type().shape, &out = e->output()->type().shape;
  if (in.size() != out.size() || in.size() < 2)
    return std::nullopt;
  int64_t copied = -1;
  for (size_t d = 0; d < in.size(); ++d)
    if (in[d] != out[d]) {
      if (in[d] != 1 || copied >= 0)
        return std::nullopt;
      copied = static_cast<int64_t>(d);
    }
  if (copied < 1)
    return std::nullopt;
  Node *r = *e->output()->users().begin();
  const Shape &merged = r->output()->type().shape;
  if (!r->is("Reshape") || r->input(0) != e->output() || merged.size() + 1 != out.size())
    return std::nullopt;
  size_t h = static_cast<size_t>(copied - 1);
  for (size_t d = 0; d < merged.size(); ++d)
    if (merged[d] != (d < h ? out[d] : d == h ? out[h] * out[h + 1] : out[d + 1]))
      return std::nullopt;
  return Repeat{e, r, static_cast<int64_t>(h)};
}

class ReplicateKvHeads : public Pass {
public:
  llvm::StringRef name() const override { return "replicate-kv-heads"; }

  llvm::Error run(Graph &g) override {
    for (Node *e : g.nodes()) {
      std::optional<Repeat> rep = e->isErased() ? std::nullopt : kvRepeat(g, e);
      if (!rep)
        continue;
      const Shape &out = e->output()->type().shape;
      int64_t groups = out[rep->headDim], heads = groups * out[rep->headDim + 1];
      if (groups >= tp_ || tp_ % groups != 0 || heads % tp_ != 0)
        continue; // the groups split over tp as they are, or no layout gives whole kv heads
      if (auto err = replicate(g, *rep, groups, tp_ / groups))
        return err;
    }
    return g.sortTopologically();
  }

private:
  PassOption<int64_t> tp_{this, "tp", 1, "tensor-parallel size", atLeast<int64_t>(1)};

  /// The projection the Expand's operand derives from, the ops in between (in
  /// graph order) and the dimension each of their results holds the kv heads
  /// in; nullopt when the chain is not one the rewrite can follow.
  struct Chain {
    Node *projection;
    std::vector<Node *> ops;
    llvm::DenseMap<const Value *, int64_t> headDim;
  };

  static std::optional<Chain> chainTo(Graph &g, const Repeat &rep, int64_t groups) {
    // Ancestors of the Expand's operand, back to projections.
    llvm::DenseSet<const Node *> ancestors;
    std::vector<Node *> projections, stack = {rep.expand->input(0)->definingNode()};
    while (!stack.empty()) {
      Node *d = stack.back();
      stack.pop_back();
      if (!d || !ancestors.insert(d).second || hasTrait(*d, OpTrait::Source))
        continue;
      if (projectionWeight(d)) {
        projections.push_back(d);
        continue;
      }
      for (Value *in : d->inputs())
        if (in)
          stack.push_back(in->definingNode());
    }
    if (projections.size() != 1)
      return std::nullopt;
    Chain c{projections[0], {}, {}};
    Node *p = c.projection;
    if (!p->is("Linear", "partita") && !p->is("MatMul"))
      return std::nullopt;
    if (p->output()->type().rank() < 1 || !singleUser(g, p->output()) || g.isGraphOutput(p->output()))
      return std::nullopt;
    c.headDim[p->output()] = p->output()->type().rank() - 1;
    // Forward from the projection through its descendants among the
    // ancestors, each op carrying a split of the heads into `groups` parts.
    for (Node *n : g.nodes()) {
      if (n == p || !ancestors.count(n) || hasTrait(*n, OpTrait::Source))
        continue;
      std::vector<Layout> actual;
      bool fromProjection = false;
      for (const Value *in : n->inputs()) {
        auto it = in ? c.headDim.find(in) : c.headDim.end();
        fromProjection |= it != c.headDim.end();
        actual.push_back(it != c.headDim.end() ? Layout::split(it->second) : Layout::replicated());
      }
      if (!fromProjection)
        continue; // the rotary tables' lookups and other inputs of the chain
      if (n->numOutputs() != 1 || g.isGraphOutput(n->output()))
        return std::nullopt;
      RuleResult r = forwardLayouts(*n, actual, groups);
      if (r.results.empty() || r.results[0].dim < 0 || r.results[0].partial || r.results[0].outer != 1)
        return std::nullopt;
      for (size_t i = 0; i < actual.size(); ++i)
        if (i < r.operands.size() && r.operands[i] != actual[i])
          return std::nullopt; // another operand would have to be cut by heads
      c.headDim[n->output()] = r.results[0].dim;
      c.ops.push_back(n);
    }
    auto it = c.headDim.find(rep.expand->input(0));
    if (it == c.headDim.end() || it->second != rep.headDim)
      return std::nullopt;
    // Nothing outside the chain reads it (a returned key cache would change).
    for (const auto &[v, d] : c.headDim)
      for (const Node *u : v->users())
        if (u != rep.expand && !llvm::is_contained(c.ops, u))
          return std::nullopt;
    return c;
  }

  llvm::Error replicate(Graph &g, const Repeat &rep, int64_t groups, int64_t copies) {
    std::optional<Chain> c = chainTo(g, rep, groups);
    if (!c)
      return llvm::Error::success(); // annotate-megatron replicates the projection whole
    Node *p = c->projection;
    int64_t features = p->output()->type().shape.back(), headSize = features / groups;
    // The weight and bias: stored, and read by this projection alone (a
    // weight shared with another reader would become two parameters).
    auto stored = [&](const Value *w) {
      const Node *wn = w ? w->definingNode() : nullptr;
      return wn && wn->is("Weight") && g.weights.find(wn->stringAttr("name", "")) &&
             llvm::all_of(w->users(), [&](const Node *u) { return u == p; });
    };
    bool hasBias = p->numInputs() > 2 && p->input(2);
    if (!stored(p->input(1)) || (hasBias && !stored(p->input(2))))
      return llvm::Error::success(); // annotate-megatron replicates the projection whole
    auto repeatedWeight = [&](Value *w, int64_t dim) -> Value * {
      std::string base = w->definingNode()->stringAttr("name", "");
      const WeightRef *ref = g.weights.find(base);
      std::string name = base + ".kv_copies" + std::to_string(copies);
      Value *v = getOrCreateWeight(g, name, ref->repeated(dim, headSize, copies));
      v->definingNode()->setAttr("kv_copies", Attribute::ofInt(copies));
      return v;
    };
    p->setInput(1, repeatedWeight(p->input(1), 1));
    if (hasBias)
      p->setInput(2, repeatedWeight(p->input(2), 0));
    for (auto &[v, d] : c->headDim)
      const_cast<Value *>(v)->type().shape[static_cast<size_t>(d)] *= copies;
    for (Node *n : c->ops)
      if (n->is("Reshape"))
        n->setInput(1, g.createShapeConstant(n->output()->type().shape, n->output()->name() + ".kv_shape"));
    Shape expanded = rep.expand->output()->type().shape;
    expanded[static_cast<size_t>(rep.headDim)] *= copies;
    expanded[static_cast<size_t>(rep.headDim) + 1] /= copies;
    rep.expand->setInput(1, g.createShapeConstant(expanded, rep.expand->output()->name() + ".kv_shape"));
    rep.expand->output()->type().shape = expanded;
    g.coverage.push_back("kv heads: " + p->describe() + " repeated to " + std::to_string(groups * copies) +
                         " heads, one per tp rank (" + std::to_string(groups) + " kv head(s), each read by " +
                         std::to_string(copies) + " ranks)");
    return llvm::Error::success();
  }
};

} // namespace

PassInfo replicateKvHeadsPass() {
  return {"replicate-kv-heads", "Give each tensor-parallel rank the kv head its query heads read",
          "Grouped-query attention with fewer kv heads than tp: the kv projection's weight becomes a "
          "repeated view (one copy of each kv head per rank that reads it) and the ops up to the head "
          "repeat carry tp heads; the copies are one parameter (kv_copies).",
          [] { return std::make_unique<ReplicateKvHeads>(); }};
}

} // namespace partita
