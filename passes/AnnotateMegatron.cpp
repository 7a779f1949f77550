//===- AnnotateMegatron.cpp - annotate-megatron pass ----------------------===//
//
// Seeds Megatron's tensor-parallel layout on the weights of a canonical graph;
// propagate-sharding derives every other value from these seeds and
// insert-collectives places the communication. The layout is found from the
// math of each op, not from fixed patterns:
//
//  * A projection whose input can be split on its feature dim with no
//    communication back to earlier projections is row-parallel (weight
//    {S(tp),R}); those earlier projections are column-parallel ({R,S(tp)}, bias
//    split). The search runs each op's backward sharding rule, so attention
//    (through head reshapes, transposes, QK^T, masking, softmax, PV), any MLP
//    activation and gated MLPs (SwiGLU's Mul of two projections) all pair up.
//    A projection whose output is split into q/k/v is first cut into three
//    projections over views of its weight: a contiguous column split of the
//    fused weight would hand each rank a wrong mix of q, k and v.
//  * An embedding Gather of a weight's rows is vocab-parallel ({S(tp),R}).
//  * A projection producing a graph output (the LM head) is column-parallel
//    over the vocabulary.
//
// Attention and MLP blocks that cannot be sharded are errors naming the block
// and the reason, unless allow-replicated=1. The decisions are listed in the
// graph's coverage report. The tensor-parallel axis (option axis, tp) is added
// to the graph's mesh, or resized there; the mesh's other axes are kept.
//===----------------------------------------------------------------------===//
#include "compiler/plan/Names.h"
#include "compiler/ops/OpRegistry.h"
#include "passes/PatternMatch.h"
#include "passes/SplitFusedProjections.h"
#include "compiler/plan/Plan.h"
#include "passes/Passes.h"
#include "passes/sharding/ShardingRules.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include <algorithm>
#include <optional>

namespace partita {

namespace {

/// Backward search from a row-parallel candidate's input.
struct PairSearch {
  int64_t parts;
  llvm::DenseMap<const Value *, Layout> wants;
  std::vector<Node *> columns;
  /// Values every rank needs whole (replicated) inside the block: keys and
  /// values read by attention with fewer heads than tp (multi-query
  /// attention's one head, broadcast; grouped heads repeated to the query
  /// heads). The projections behind them are replicated over tp.
  std::vector<const Value *> shared;
  bool sawSoftmax = false;
  std::string why;

  bool want(const Value *v, const Layout &l) {
    auto it = wants.find(v);
    if (it != wants.end()) {
      if (it->second == l)
        return true;
      why = "value %" + v->name() + " would need two different layouts";
      return false;
    }
    wants[v] = l;
    if (l.isReplicated())
      return true;
    Node *d = v->definingNode();
    if (!d) {
      why = "graph input %" + v->name() + " would need to be split";
      return false;
    }
    if (hasTrait(*d, OpTrait::Source)) {
      if (l.outer != 1)
        why = "constant %" + v->name() + " would need a strided slice";
      return l.outer == 1; // sliced locally
    }
    if (projectionWeight(d) && l.dim == v->type().rank() - 1 && l.outer == 1) {
      if (v->type().shape.back() % parts != 0) {
        why = "projection " + d->describe() + " has " + std::to_string(v->type().shape.back()) +
              " output features, not divisible by tp=" + std::to_string(parts);
        return false;
      }
      columns.push_back(d);
      return true;
    }
    auto ops = backwardLayouts(*d, v->resultIndex(), l, parts, why);
    if (!ops && repeatsHeads(d)) {
      // Grouped kv heads repeated to the query heads (LLaMA's repeat_kv:
      // Unsqueeze, Expand, Reshape), fewer groups than tp: no split of the
      // groups gives each rank its query heads' groups, so every rank
      // computes all of them and keeps the heads it reads (vLLM replicates
      // kv heads so; Megatron-LM requires groups that divide tp).
      why.clear();
      const Value *groups = d->is("Expand") ? d->input(0) : d->input(0)->definingNode()->input(0);
      shared.push_back(groups);
      return want(d->input(0), Layout::replicated());
    }
    if (!ops)
      return false;
    sawSoftmax |= d->is("Softmax");
    bool scores = d->is("MatMul") && !projectionWeight(d); // q k^T or probabilities x v
    for (size_t i = 0; i < d->numInputs(); ++i) {
      if (d->input(i) && !want(d->input(i), (*ops)[i]))
        return false;
      if (scores && d->input(i) && (*ops)[i].isReplicated()) // one kv head broadcast over the query heads
        shared.push_back(d->input(i));
    }
    return true;
  }

  /// An Expand, or a Reshape of one, that makes copies of its input's
  /// elements (kv heads repeated for the query heads that share them).
  static bool repeatsHeads(const Node *d) {
    const Node *e = d->is("Reshape") ? d->input(0)->definingNode() : d;
    return e && e->is("Expand") && e->input(0)->type().numel() < e->output()->type().numel();
  }
};

class AnnotateMegatron : public Pass {
public:
  llvm::StringRef name() const override { return "annotate-megatron"; }

  llvm::Error run(Graph &g) override {
    // Kept to try other sizes on when this one fails.
    std::unique_ptr<Graph> original = tp_ > 1 && !allowReplicated_ && !probing_ ? cloneGraph(g) : nullptr;
    setMeshAxis(g.mesh);
    // This pass's lines are written afresh; assign-stages' and replicate-kv-heads' stay.
    llvm::erase_if(g.coverage, [](const std::string &line) {
      return !llvm::StringRef(line).startswith("pipeline") && !llvm::StringRef(line).startswith("kv heads");
    });
    splitFusedProjections(g);
    if (auto err = g.sortTopologically())
      return err;
    std::vector<std::string> problems;
    llvm::DenseSet<const Node *> assigned;
    llvm::DenseSet<const Node *> coveredSoftmax;
    llvm::DenseMap<const Node *, std::string> rowWhy; // why a row-parallel search from it failed

    // Row/column pairs (attention and MLP blocks).
    for (Node *n : g.nodes()) {
      Node *w = n->isErased() ? nullptr : ownWeight(n);
      if (!w || assigned.count(n) || n->input(0)->type().rank() < 1)
        continue;
      PairSearch search{tp_, {}, {}, {}, false, ""};
      int64_t last = n->input(0)->type().rank() - 1;
      int64_t features = n->input(0)->type().shape.back();
      bool found = features % tp_ == 0 && search.want(n->input(0), Layout::split(last)) && !search.columns.empty();
      if (!found) {
        rowWhy[n] = features % tp_ ? "its " + std::to_string(features) + " input features do not divide by tp=" +
                                         std::to_string(tp_)
                                   : search.why;
        continue;
      }
      bool clash = false;
      for (Node *c : search.columns)
        clash |= assigned.count(c) > 0;
      if (clash)
        continue;
      std::string kind = search.sawSoftmax ? "attention" : "mlp";
      std::string cols;
      for (Node *c : search.columns) {
        assigned.insert(c);
        seed(c, 1);
        cols += (cols.empty() ? "" : ", ") + c->describe();
      }
      for (const auto &[v, l] : search.wants)
        if (const Node *d = v->definingNode(); d && d->is("Softmax"))
          coveredSoftmax.insert(d);
      for (Node *p : projectionsBehind(search.shared))
        if (int64_t kvHeads = headsOf(p, n); assigned.insert(p).second)
          g.coverage.push_back("kv projection " + p->describe() + ": replicated over tp (" +
                               (kvHeads > 0 ? std::to_string(kvHeads) : std::string("its")) +
                               " kv head(s) for the query heads of every rank: tp=" + std::to_string(tp_) +
                               " does not split the kv heads)");
      assigned.insert(n);
      Node *row = decomposeRowParallel(g, n);
      assigned.insert(row);
      seed(row, 0);
      g.coverage.push_back(kind + " block: sharded; column-parallel " + cols + "; row-parallel " + row->describe());
    }

    // Token embeddings: Gather of a weight's rows by indices the program is
    // given (positions and token types looked up by constants stay replicated).
    for (Node *n : g.nodes()) {
      if (!n->is("Gather") || n->intAttr("axis", 0) != 0 || constantValue(n->input(1)))
        continue;
      Node *w = n->input(0)->definingNode();
      if (!w || !w->is("Weight") || w->output()->type().rank() != 2)
        continue;
      if (w->intAttr("trainable", 1) == 0) // a frozen table (rotary cos/sin by position): no state to split
        continue;
      int64_t vocab = w->output()->type().shape[0];
      if (vocab % tp_ != 0) {
        problems.push_back("embedding " + n->describe() + ": vocabulary " + std::to_string(vocab) +
                           " is not divisible by tp=" + std::to_string(tp_) +
                           "; pad the vocabulary to a multiple of " + std::to_string(tp_) +
                           " (as Megatron's --make-vocab-size-divisible-by does)");
        continue;
      }
      auto readAsTable = [&](const Node *t) {
        const Value *table = t->output();
        return std::all_of(table->users().begin(), table->users().end(), [&](const Node *u) {
          return (u->is("Gather") && u->input(0) == table && u->intAttr("axis", 0) == 0) || tiedHeadTable(u) ||
                 u->is("EmbeddingGrad", "partita") || // its backward (reads the table's shape)
                 (t->hasAttr("tied") && isHeadOperand(u, table)); // the tied head's backward, dY E
        });
      };
      if (readAsTable(w)) {
        setLayout(w->output(), axis_.value(), Layout::split(0)); // a tied head follows: split over the vocabulary too
        // A later pipeline stage's copy of the table (its tied head's) is split as the table is.
        for (Node *c : g.nodes())
          if (c->is("Weight") && c->stringAttr(kCopyOfAttr, "") == w->output()->name() && readAsTable(c))
            setLayout(c->output(), axis_.value(), Layout::split(0));
      }
      g.coverage.push_back("embedding: vocab-parallel " + n->describe());
    }

    // LM head: an unpaired projection producing a graph output; tied to an
    // embedding (MatMul by its transpose), it is split as the table is.
    for (Node *n : g.nodes()) {
      for (Node *u : n->output()->users())
        if (const Node *table = tiedHeadTable(n);
            table && !assigned.count(u) && isModelOutput(g, u->output()) && isHeadOperand(u, n->output())) {
          assigned.insert(u);
          bool split = table->output()->sharding() && !table->output()->sharding()->isReplicated();
          std::string tableName = table->hasAttr(kCopyOfAttr) // a later pipeline stage's copy
                                      ? table->stringAttr(kCopyOfAttr, "") + "' (its copy '" +
                                            table->stringAttr("name", "") + "')"
                                      : table->stringAttr("name", "") + "'";
          g.coverage.push_back("lm head: " + std::string(split ? "vocab-parallel (column)" : "replicated") +
                               ", tied to embedding '" + tableName + " " + u->describe());
        }
      Node *w = ownWeight(n);
      if (!w || assigned.count(n) || !isModelOutput(g, n->output()))
        continue;
      int64_t vocab = w->output()->type().shape[1];
      assigned.insert(n);
      if (vocab % tp_ != 0) { // a small classifier head is cheap to replicate
        g.coverage.push_back("output projection " + n->describe() + ": replicated (" + std::to_string(vocab) +
                             " outputs not divisible by tp=" + std::to_string(tp_) + ")");
        continue;
      }
      seed(n, 1);
      g.coverage.push_back("lm head: vocab-parallel (column) " + n->describe());
    }

    // Everything else that should have been sharded; attention first, since
    // its reason (e.g. heads not divisible by tp) explains the projections'.
    std::vector<std::string> blockProblems;
    // The model's own Softmaxes: a recomputed copy in the backward (recompute
    // selective) takes its sharding from the forward's Q and K it reads.
    const auto forward = forwardNodes(g);
    for (Node *n : g.nodes()) {
      if (n->is("Softmax") && !coveredSoftmax.count(n) && forward.count(n)) {
        // Heads that do not divide say it all.
        int64_t heads = scoreHeads(n);
        const Node *row = downstreamProjection(n);
        std::string why = heads > 0 && heads % tp_ != 0
                              ? std::to_string(heads) + " heads do not divide by tp=" + std::to_string(tp_)
                          : row && rowWhy.count(row) && !rowWhy[row].empty() ? rowWhy[row]
                                                                             : "no projection pair splits its heads";
        blockProblems.push_back("attention block at " + n->describe() + " could not be sharded: " + why);
      }
      if (ownWeight(n) && !assigned.count(n)) {
        if (isLoneProjection(n, forward)) { // Megatron replicates a pooler or a classifier's hidden layer
          g.coverage.push_back("lone projection " + n->describe() +
                               ": replicated (outside any attention or MLP block: no Softmax and no other "
                               "projection before or after it)");
          continue;
        }
        problems.push_back("projection " + n->describe() + " could not be sharded: " + unpairedWhy(n, rowWhy));
      }
    }
    problems.insert(problems.begin(), blockProblems.begin(), blockProblems.end());
    // A kv head's copies (replicate-kv-heads) are one copy per tp rank: held
    // whole they would be tp copies of every rank's work, and the runtime
    // reads them only as split. So their block must shard, replicas allowed or not.
    for (Node *n : g.nodes())
      if (n->is("Weight") && n->hasAttr("kv_copies") &&
          layoutOf(n->output(), axis_.value()) != Layout::split(n->output()->type().rank() - 1))
        return passError(name(), "weight '" + n->stringAttr("name", "") + "' holds one copy of a kv head per tp " +
                                     "rank, but its attention block was not sharded" +
                                     (problems.empty() ? std::string() : " (" + problems.front() + ")") +
                                     "; choose a tp the attention's heads divide by");
    for (const auto &p : problems)
      g.coverage.push_back("replicated: " + p);
    if (!problems.empty() && !allowReplicated_ && tp_ > 1)
      return passError(name(), problems.front() +
                                   (problems.size() > 1 ? " (and " + std::to_string(problems.size() - 1) +
                                                              " more; --allow-replicated compiles it and lists them all under coverage)"
                                                        : "") +
                                   (original ? "; " + workingTpSizes(*original) : std::string()) +
                                   "; pass allow-replicated=1 (--allow-replicated) to replicate it");
    return llvm::Error::success();
  }

private:
  PassOption<int64_t> tp_{this, "tp", 1, "tensor-parallel size", atLeast<int64_t>(1)};
  PassOption<std::string> axis_{
      this, "axis", mesh_axis::kTensor, "the mesh axis to shard over (added to the graph's mesh, or resized there)", meshAxisName()};
  PassOption<bool> allowReplicated_{this, "allow-replicated", false, "replicate what cannot be sharded"};
  bool probing_ = false; // a trial run of workingTpSizes: errors only, no suggestions

  /// Why projection `n` found no partner: its own output features, else the
  /// reason the search from the projection reading it failed.
  std::string unpairedWhy(const Node *n, const llvm::DenseMap<const Node *, std::string> &rowWhy) const {
    int64_t features = n->output()->type().shape.empty() ? 0 : n->output()->type().shape.back();
    if (features % tp_ != 0)
      return "its " + std::to_string(features) + " output features do not divide by tp=" + std::to_string(tp_);
    if (const Node *sm = downstreamSoftmax(n)) { // q or k of attention whose heads do not split
      int64_t heads = scoreHeads(sm);
      if (heads > 0 && heads % tp_ != 0)
        return "it feeds the attention scores at " + sm->describe() + ", whose " + std::to_string(heads) +
               " head(s) do not divide by tp=" + std::to_string(tp_);
    }
    auto it = rowWhy.find(n);
    if (it == rowWhy.end() || it->second.empty())
      if (const Node *row = downstreamProjection(n))
        it = rowWhy.find(row);
    return it != rowWhy.end() && !it->second.empty() ? "no row/column pairing (" + it->second + ")"
                                                     : "no row/column pairing";
  }

  /// "tp=1, 2 or 4 would shard every block": the sizes up to twice tp (at
  /// least 8) for which this pass succeeds on a copy of `g`.
  std::string workingTpSizes(const Graph &g) const {
    std::vector<int64_t> ok;
    for (int64_t t = 1; t <= std::max<int64_t>(8, 2 * tp_); ++t) {
      if (t == tp_)
        continue;
      if (t == 1) {
        ok.push_back(t);
        continue;
      }
      std::unique_ptr<Graph> trial = cloneGraph(g);
      AnnotateMegatron probe;
      probe.tp_ = t;
      probe.axis_ = axis_.value();
      probe.probing_ = true;
      if (llvm::Error err = probe.run(*trial))
        llvm::consumeError(std::move(err));
      else
        ok.push_back(t);
    }
    std::string list;
    for (size_t i = 0; i < ok.size(); ++i)
      list += (i == 0 ? "" : i + 1 == ok.size() ? " or " : ", ") + std::to_string(ok[i]);
    if (ok.size() == 1)
      return "of tp=1.." + std::to_string(std::max<int64_t>(8, 2 * tp_)) + " only tp=1 shards every block";
    return "tp=" + list + " would shard every block";
  }

  /// Gives the mesh the tensor-parallel axis with size tp, keeping its other
  /// axes (dp, pp) and their order; a new axis goes last (minor).
  void setMeshAxis(Mesh &mesh) const {
    for (MeshAxis &a : mesh.axes)
      if (a.name == axis_.value()) {
        a.size = tp_;
        return;
      }
    mesh.axes.push_back(MeshAxis{axis_.value(), tp_});
  }

  /// A projection outside every attention and MLP block (BERT's pooler, its
  /// MLM transform): it reads no Softmax and no other projection (back to the
  /// last norm or residual sum), and what it computes reaches no Softmax, no
  /// MatMul of two activations and no other projection before the next norm,
  /// so it pairs with nothing and replicating it costs one small matmul per
  /// rank.
  /// The nodes the model's own outputs (not the gradients autodiff added)
  /// depend on: the forward pass, the loss included.
  static llvm::DenseSet<const Node *> forwardNodes(const Graph &g) {
    llvm::DenseSet<const Node *> seen;
    std::vector<const Node *> stack;
    for (const Value *out : g.outputs())
      if (!llvm::StringRef(out->name()).startswith(optimizer_io::kGradPrefix) && out->definingNode())
        stack.push_back(out->definingNode());
    while (!stack.empty()) {
      const Node *n = stack.back();
      stack.pop_back();
      if (!seen.insert(n).second)
        continue;
      for (const Value *in : n->inputs())
        if (in && in->definingNode())
          stack.push_back(in->definingNode());
    }
    return seen;
  }

  static bool isLoneProjection(const Node *n, const llvm::DenseSet<const Node *> &forward) {
    // Upstream, back to the block boundary (a norm or a residual sum): an
    // attention output projection reads a Softmax, an MLP's second one the
    // first projection.
    std::vector<const Value *> back = {n->input(0)};
    llvm::DenseSet<const Value *> visited;
    for (size_t i = 0; i < back.size(); ++i) {
      if (i >= 256)
        return false;
      const Node *d = back[i]->definingNode();
      if (!d || !visited.insert(back[i]).second || hasTrait(*d, OpTrait::Source))
        continue;
      if (d->is("Softmax") || d->is("LogSoftmax") || projectionWeight(d))
        return false;
      bool residual = d->is("Add") && d->numInputs() == 2 && !constantValue(d->input(0)) &&
                      !constantValue(d->input(1));
      if (hasTrait(*d, OpTrait::Normalizes) || residual)
        continue;
      for (const Value *in : d->inputs())
        if (in && isFloat(in->type().dtype))
          back.push_back(in);
    }
    std::vector<const Node *> queue = {n};
    llvm::DenseSet<const Node *> seen = {n};
    for (size_t i = 0; i < queue.size(); ++i) {
      if (i >= 256)
        return false;
      for (const Value *out : queue[i]->outputs())
        for (const Node *u : out->users()) {
          if (!forward.count(u)) // the backward reads forward values too
            continue;
          if (u->is("Softmax") || u->is("LogSoftmax") || (u->is("MatMul") && !projectionWeight(u)))
            return false; // attention: scores, or probabilities times values
          if (projectionWeight(u)) // an MLP (or a head it could pair with)
            return false;
          // A norm over all of this projection's features: nothing after it
          // pairs with it (BERT's MLM transform, dense -> GELU -> LayerNorm ->
          // decoder). A norm over part of them (q/k-norm over head_dim) is
          // inside attention: the search goes on through it.
          if (u->op().find("Norm") != std::string::npos && u->input(0) && u->input(0)->type().rank() >= 1 &&
              u->input(0)->type().shape.back() == n->output()->type().shape.back())
            continue;
          if (seen.insert(u).second)
            queue.push_back(u);
        }
    }
    return true;
  }

  /// The heads of an attention Softmax's scores [.., heads, queries, keys]
  /// (0 when the scores have no heads dimension).
  static int64_t scoreHeads(const Node *softmax) {
    const Shape &scores = softmax->output()->type().shape;
    return scores.size() >= 4 ? scores[scores.size() - 3] : 0;
  }

  /// The first node `match` takes among those reached from `n` through its
  /// users (breadth first, 64 nodes at most), not going on through projections.
  static const Node *firstDownstream(const Node *n, llvm::function_ref<bool(const Node *)> match) {
    std::vector<const Node *> queue = {n};
    llvm::DenseSet<const Node *> seen = {n};
    for (size_t i = 0; i < queue.size() && i < 64; ++i)
      for (const Value *out : queue[i]->outputs())
        for (const Node *u : out->users()) {
          if (match(u))
            return u;
          if (!projectionWeight(u) && seen.insert(u).second)
            queue.push_back(u);
        }
    return nullptr;
  }
  /// The first Softmax reached from projection `n` before any other projection.
  static const Node *downstreamSoftmax(const Node *n) {
    return firstDownstream(n, [](const Node *u) { return u->is("Softmax"); });
  }
  /// The first projection reached from `n`.
  static const Node *downstreamProjection(const Node *n) {
    return firstDownstream(n, [](const Node *u) { return projectionWeight(u) != nullptr; });
  }

  /// The projections the values `from` derive from within their block: back
  /// through every op, stopping at projections (collected), norms, softmaxes,
  /// weights, constants and graph inputs.
  static std::vector<Node *> projectionsBehind(const std::vector<const Value *> &from) {
    std::vector<Node *> found;
    std::vector<const Value *> stack(from.begin(), from.end());
    llvm::DenseSet<const Value *> seen;
    while (!stack.empty()) {
      const Value *v = stack.back();
      stack.pop_back();
      Node *d = v->definingNode();
      if (!d || !seen.insert(v).second || seen.size() > 256 || hasTrait(*d, OpTrait::Source) ||
          d->is("Softmax") || hasTrait(*d, OpTrait::Normalizes))
        continue;
      if (ownWeight(d)) {
        if (llvm::find(found, d) == found.end())
          found.push_back(d);
        continue;
      }
      for (const Value *in : d->inputs())
        if (in && isFloat(in->type().dtype))
          stack.push_back(in);
    }
    return found;
  }

  /// How many heads of the attention block `row` closes the kv projection
  /// `p` computes: its output features over the head size (the row-parallel
  /// projection's input features over the block's query heads).
  static int64_t headsOf(const Node *p, const Node *row) {
    const Node *sm = nullptr;
    for (const Node *n = row; n && !sm; n = n->input(0) ? n->input(0)->definingNode() : nullptr)
      for (const Value *in : n->inputs())
        if (in && in->definingNode() && in->definingNode()->is("Softmax"))
          sm = in->definingNode();
    int64_t heads = sm ? scoreHeads(sm) : 0;
    int64_t width = row->input(0)->type().shape.back();
    int64_t headDim = heads > 0 ? width / heads : 0;
    return headDim > 0 ? p->output()->type().shape.back() / headDim : 0;
  }

  /// Whether `v` is a graph output, or is one read through casts alone
  /// (mixed precision rounds the logits through the half type and back).
  static bool isModelOutput(const Graph &g, const Value *v) {
    return g.isGraphOutput(v) || llvm::any_of(v->users(), [&](const Node *u) {
             return u->is("Cast") && isModelOutput(g, u->output());
           });
  }

  /// The embedding table a tied head reads: `t` is Transpose(perm [1,0]) of a
  /// Weight that tie-embeddings tied a head to.
  static const Node *tiedHeadTable(const Node *t) {
    if (!t->is("Transpose") || t->intsAttr("perm") != std::vector<int64_t>{1, 0})
      return nullptr;
    const Node *w = t->input(0)->definingNode();
    return w && w->is("Weight") && w->hasAttr("tied") ? w : nullptr;
  }

  /// A projection's weight, unless it is an embedding a head is tied to: a
  /// product by the table itself is the tied head's own math (its backward
  /// dX = dY E), split as the table is.
  static Node *ownWeight(const Node *n) {
    Node *w = projectionWeight(n);
    return w && !w->hasAttr("tied") ? w : nullptr;
  }

  static bool isHeadOperand(const Node *u, const Value *w) {
    return (u->is("MatMul") || u->is("Linear", "partita")) && u->input(1) == w;
  }

  /// Sets the weight (and, for column-parallel Linear, the bias) layout.
  void seed(Node *projection, int64_t weightDim) {
    setLayout(projection->input(1), axis_.value(), Layout::split(weightDim));
    if (weightDim == 1 && projection->numInputs() > 2 && projection->input(2))
      if (Node *b = projection->input(2)->definingNode(); b && b->is("Weight"))
        setLayout(projection->input(2), axis_.value(), Layout::split(0));
  }

  /// A row-parallel Linear adds its bias after the reduction: MatMul + Add.
  Node *decomposeRowParallel(Graph &g, Node *n) {
    if (!n->is("Linear", "partita"))
      return n;
    Value *out = n->output();
    Node *mm = g.createNode("MatMul", {n->input(0), n->input(1)}, {out->name() + ".matmul"}, "", n->name());
    mm->output()->type() = out->type();
    Node *add = g.createNode("Add", {mm->output(), n->input(2)}, {out->name()}, "", n->name() + ".bias");
    add->output()->type() = out->type();
    g.replaceAllUsesWith(out, add->output(), /*takeName=*/true);
    g.eraseNode(n);
    return mm;
  }

};

} // namespace

PassInfo annotateMegatronPass() {
  return {"annotate-megatron", "Seed Megatron tensor-parallel layouts on weights",
          "Pairs column- and row-parallel projections through each op's backward sharding rule, "
          "splits fused q/k/v projections, makes embeddings and the LM head vocab-parallel, and "
          "reports coverage; unshardable attention/MLP blocks are errors unless allow-replicated=1.",
          [] { return std::make_unique<AnnotateMegatron>(); }};
}

} // namespace partita
