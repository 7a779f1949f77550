//===- AssignStages.cpp - cut the forward into cost-balanced pipeline stages ---===//
//
// assign-stages{pp=P} runs on the forward graph (with its loss, before
// autodiff) and tags every node with the pipeline stage it runs on
// (kStageAttr). Stages are cut between transformer layers only: a layer is
// the run of nodes under one numbered module path, as torch.onnx names them
// ("/h.3/...", "/model/layers.3/...", "/encoder/layer.3/..."; a node without a
// name is known by its weights' names, "h.3.attn.c_attn.weight"). Between two
// layers the cut goes where the fewest values cross. What comes before the
// first layer (the embedding) stays on the first stage, what comes after the
// last (the final norm, the LM head, the loss) on the last. A model whose
// names number no layers has them found from its dataflow (the blocks its
// residual stream repeats, LayerStructure.h); one without repeating blocks
// is cut wherever the fewest values cross.
//
// The boundaries minimise the slowest stage's time by dynamic programming over
// the layer boundaries: each node's roofline time from its FLOP and bytes
// moved (StageCost.h; option intensity=FLOP per byte, 64). Each stage's FLOP,
// bytes, parameters and stashed activations are reported. layers=a,b,... (one
// count per stage, summing to the layer count) sets the boundaries instead.
//
// Nodes that read only graph inputs, constants and frozen buffers (position
// ids; a causal mask sliced from a bool buffer and negated; rotary tables)
// get no stage: every stage that reads them computes its own (split-pipeline)
// instead of receiving it every micro-batch, and their module names do not
// pin the cut (torch.onnx shares one buffer, and its slice, among all the
// layers that hold an equal one). Nodes
// that read only weights and constants (a tied head's transpose of the table)
// run on the first stage that reads them. Each
// stage's layers and cost are added to the graph's coverage (plan.json).
//===----------------------------------------------------------------------===//
#include "compiler/ops/OpRegistry.h"
#include "passes/ClassifyParameters.h"
#include "passes/LayerNames.h"
#include "passes/LayerStructure.h"
#include "passes/StageCost.h"
#include "passes/Passes.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringExtras.h"
#include <algorithm>
#include <limits>
#include <map>
#include <set>

namespace partita {

namespace {

bool isLeaf(const Node &n) { return hasTrait(n, OpTrait::Source); }

/// Orders the nodes so that each layer's are contiguous where the data
/// allows: an encoder-decoder's export interleaves the decoder's first
/// self-attention with the encoder's layers, which leaves no boundary
/// between them. Each node is ranked by when its layer ends (its last node's
/// position; a node outside the layers by the next layer's, or last), and
/// the ready node of the lowest rank runs first (ties: the present order).
void orderLayersContiguously(Graph &g) {
  std::vector<Node *> nodes = g.nodes();
  const size_t n = nodes.size();
  llvm::DenseMap<const Node *, size_t> pos;
  for (size_t i = 0; i < n; ++i)
    pos[nodes[i]] = i;
  std::vector<std::string> key(n);
  std::map<std::string, size_t> layerEnd;
  for (size_t i = 0; i < n; ++i)
    if (!isLeaf(*nodes[i]) && !(key[i] = layerOf(*nodes[i])).empty())
      layerEnd[key[i]] = i;
  if (layerEnd.empty())
    return;
  std::vector<size_t> rank(n, n);
  for (size_t i = n, next = n; i-- > 0;) {
    if (isLeaf(*nodes[i])) {
      rank[i] = 0;
      continue;
    }
    if (!key[i].empty())
      next = layerEnd[key[i]];
    rank[i] = next;
  }
  std::vector<size_t> waiting(n, 0);
  std::vector<std::vector<size_t>> readers(n);
  for (size_t i = 0; i < n; ++i)
    for (const Value *in : nodes[i]->inputs())
      if (const Node *def = in ? in->definingNode() : nullptr; def && pos.count(def)) {
        ++waiting[i];
        readers[pos[def]].push_back(i);
      }
  std::set<std::pair<size_t, size_t>> ready;
  for (size_t i = 0; i < n; ++i)
    if (!waiting[i])
      ready.insert({rank[i], i});
  std::vector<Node *> order;
  while (!ready.empty()) {
    size_t i = ready.begin()->second;
    ready.erase(ready.begin());
    order.push_back(nodes[i]);
    for (size_t r : readers[i])
      if (--waiting[r] == 0)
        ready.insert({rank[r], r});
  }
  if (order.size() == n)
    g.setOrder(order);
}

class AssignStages : public Pass {
public:
  llvm::StringRef name() const override { return "assign-stages"; }

  llvm::Error run(Graph &g) override {
    layers_ = layersOption_.value();
    cuts_ = cutsOption_.value();
    if (auto err = assign(g))
      return err;
    placeWeightReads(g);
    return llvm::Error::success();
  }

private:
  /// A node computed from weights and constants alone (a tied head's
  /// transpose of the table) runs on the first stage that reads it, not
  /// where the cut left it: no stage sends what another can compute from its
  /// own copy of the weight, and each reads the weights its own math needs.
  static void placeWeightReads(Graph &g) {
    llvm::DenseSet<const Value *> fromWeights;
    std::vector<Node *> nodes;
    for (Node *n : g.nodes()) {
      if (isLeaf(*n)) {
        fromWeights.insert(n->output());
        continue;
      }
      if (n->hasAttr(kStageAttr) && n->numInputs() > 0 &&
          llvm::all_of(n->inputs(), [&](const Value *in) { return !in || fromWeights.count(in); })) {
        fromWeights.insert(n->outputs().begin(), n->outputs().end());
        nodes.push_back(n);
      }
    }
    for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
      int64_t stage = std::numeric_limits<int64_t>::max();
      for (const Value *o : (*it)->outputs())
        for (const Node *u : o->users())
          if (u->hasAttr(kStageAttr))
            stage = std::min(stage, u->intAttr(kStageAttr, 0));
      if (stage != std::numeric_limits<int64_t>::max())
        (*it)->setAttr(kStageAttr, Attribute::ofInt(stage));
    }
  }

  llvm::Error assign(Graph &g) {
    if (pp_ == 1 && layers_.empty())
      return llvm::Error::success();
    if (!cuts_.empty() && static_cast<int64_t>(cuts_.size()) + 1 != pp_)
      return passError(name(), "cuts names " + llvm::Twine(cuts_.size()) + " node(s): " + llvm::Twine(pp_) +
                                   " stages need " + llvm::Twine(pp_ - 1));
    if (!layers_.empty() && static_cast<int64_t>(layers_.size()) != pp_)
      return passError(name(), "layers gives " + llvm::Twine(layers_.size()) + " stage(s), pp is " +
                                   llvm::Twine(pp_));
    orderLayersContiguously(g);
    // The nodes that get a stage, in program order; input-only ones get none.
    llvm::DenseSet<const Value *> inputOnly;
    std::vector<Node *> order;
    for (Node *n : g.nodes()) {
      if (n->is("Constant") || (n->is("Weight") && !isTrainableWeight(*n))) // a frozen buffer is a constant here
        inputOnly.insert(n->output());
      if (isLeaf(*n))
        continue;
      bool fromInputs = llvm::all_of(n->inputs(), [&](const Value *in) {
        return !in || g.isGraphInput(in) || inputOnly.count(in);
      });
      if (fromInputs) {
        inputOnly.insert(n->outputs().begin(), n->outputs().end());
        n->removeAttr(kStageAttr);
        continue;
      }
      order.push_back(n);
    }
    const int64_t count = static_cast<int64_t>(order.size());
    if (count == 0)
      return passError(name(), "the graph has no node to place on a stage");
    llvm::DenseMap<const Node *, int64_t> pos;
    for (int64_t i = 0; i < count; ++i)
      pos[order[i]] = i;
    // crossing[k]: values made before position k and read at k or later (a
    // graph output is read at the end: it leaves from the last stage).
    std::vector<int64_t> crossing(count + 1, 0);
    for (int64_t i = 0; i < count; ++i)
      for (const Value *out : order[i]->outputs()) {
        int64_t last = g.isGraphOutput(out) ? count - 1 : i;
        for (const Node *u : out->users())
          if (auto it = pos.find(u); it != pos.end())
            last = std::max(last, it->second);
        if (last > i) {
          crossing[i + 1] += 1;
          crossing[last + 1] -= 1;
        }
      }
    for (int64_t k = 1; k <= count; ++k)
      crossing[k] += crossing[k - 1];
    // Time (roofline FLOP) and the rest of the cost of positions [0, k).
    std::vector<double> prefix(count + 1, 0);
    costs_.assign(count + 1, NodeCost{});
    llvm::DenseSet<const Value *> seen;
    for (int64_t i = 0; i < count; ++i) {
      NodeCost c = forwardCost(*order[i], seen);
      prefix[i + 1] = prefix[i] + c.time(intensity_);
      costs_[i + 1] = costs_[i];
      costs_[i + 1] += c;
    }

    if (!cuts_.empty())
      return cutAt(g, order, prefix);
    // Layers, and one candidate cut per boundary between two of them: by
    // their numbered names, else as the dataflow shows them (a model whose
    // exporter numbers no modules).
    std::vector<std::string> keys;
    std::vector<std::pair<int64_t, int64_t>> spans; // first, last position
    {
      std::map<std::string, size_t> index;
      for (int64_t i = 0; i < count; ++i) {
        std::string key = layerOf(*order[i]);
        if (key.empty())
          continue;
        auto [it, added] = index.try_emplace(key, keys.size());
        if (added) {
          keys.push_back(key);
          spans.emplace_back(i, i);
        }
        spans[it->second].second = i;
      }
    }
    bool byStructure = false;
    if (keys.empty()) {
      std::vector<const Node *> forward(order.begin(), order.end());
      for (const std::vector<const Node *> &layer : layersByStructure(forward)) {
        int64_t first = count, last = -1;
        for (const Node *n : layer)
          if (auto it = pos.find(n); it != pos.end())
            first = std::min(first, it->second), last = std::max(last, it->second);
        if (last < 0)
          continue;
        keys.push_back("layer " + std::to_string(keys.size()));
        spans.emplace_back(first, last);
      }
      byStructure = !keys.empty();
    }
    std::vector<int64_t> cuts; // candidate positions, increasing
    auto bestIn = [&](int64_t from, int64_t to) { // fewest crossing in (from, to]
      int64_t best = to;
      for (int64_t k = to; k > from; --k)
        if (crossing[k] < crossing[best])
          best = k;
      return best;
    };
    if (!keys.empty()) {
      for (size_t j = 0; j + 1 < keys.size(); ++j) {
        int64_t lastA = spans[j].second, firstB = spans[j + 1].first;
        if (lastA >= firstB)
          return passError(name(), "layers '" + keys[j] + "' and '" + keys[j + 1] +
                                       "' interleave in the program order: no stage boundary between them (" +
                                       order[lastA]->describe() + " of '" + keys[j] + "' reads what " +
                                       order[firstB]->describe() + " of '" + keys[j + 1] + "' computes, or " +
                                       "comes after it)");
        cuts.push_back(bestIn(lastA, firstB));
      }
    } else {
      if (!layers_.empty())
        return passError(name(), "layers=... counts transformer layers, but no node is named after a numbered "
                                 "module (\"/h.0/...\", \"layers.0\") and the dataflow shows no repeating "
                                 "blocks: give pp alone");
      int64_t fewest = std::numeric_limits<int64_t>::max();
      for (int64_t k = 1; k < count; ++k)
        fewest = std::min(fewest, crossing[k]);
      for (int64_t k = 1; k < count; ++k)
        if (crossing[k] == fewest)
          cuts.push_back(k);
    }
    int64_t pieces = static_cast<int64_t>(cuts.size()) + 1;
    if (equal_ && layers_.empty()) {
      if (keys.empty() || pieces % pp_ != 0)
        return passError(name(), "equal stages: the model's " + llvm::Twine(pieces) + " " +
                                     (keys.empty() ? "pieces" : "layers") + " do not divide into " +
                                     llvm::Twine(pp_) + " stages (pp x virtual stages)");
      layers_.assign(pp_, pieces / pp_);
    }
    if (pp_ > pieces)
      return passError(name(), llvm::Twine(pp_) + " stages are more than the model's " + llvm::Twine(pieces) +
                                   (keys.empty() ? " pieces (no numbered layers: the places where the fewest values "
                                                   "cross cut it)"
                                                 : " layers"));
    std::vector<int64_t> chosen; // indices into cuts
    if (!layers_.empty()) {
      int64_t sum = 0;
      for (int64_t k : layers_)
        sum += k;
      if (sum != pieces)
        return passError(name(), "layers sums to " + llvm::Twine(sum) + ", the model has " + llvm::Twine(pieces) +
                                     " layers");
      for (size_t s = 0, at = 0; s + 1 < layers_.size(); ++s)
        chosen.push_back(static_cast<int64_t>(at += layers_[s]) - 1);
    } else {
      chosen = balance(cuts, prefix, count);
    }
    // Stage per position, and the report.
    std::vector<int64_t> bounds{0};
    for (int64_t c : chosen)
      bounds.push_back(cuts[c]);
    bounds.push_back(count);
    for (int64_t s = 0; s < pp_; ++s)
      for (int64_t i = bounds[s]; i < bounds[s + 1]; ++i)
        order[i]->setAttr(kStageAttr, Attribute::ofInt(s));
    g.coverage.push_back("pipeline: " + std::to_string(pp_) + " stages over " + std::to_string(pieces) +
                         (keys.empty()  ? " pieces (no numbered layers: cut where the fewest values cross)"
                          : byStructure ? " layers (no numbered names: the blocks the dataflow repeats)"
                                        : " layers") +
                         (layers_.empty() ? ", balanced by cost" : ", the layers per stage as given"));
    for (int64_t s = 0; s < pp_; ++s) {
      int64_t firstPiece = s == 0 ? 0 : chosen[s - 1] + 1;
      int64_t lastPiece = s + 1 == pp_ ? pieces - 1 : chosen[s];
      std::string what = keys.empty() ? "pieces " + std::to_string(firstPiece) + "-" + std::to_string(lastPiece)
                                      : std::to_string(lastPiece - firstPiece + 1) + " layer(s) " +
                                            keys[firstPiece] + " .. " + keys[lastPiece];
      std::string line = "pipeline stage " + std::to_string(s) + ": " + what + ", " + report(bounds[s], bounds[s + 1]);
      if (s + 1 < pp_)
        line += ", cut before node " + order[bounds[s + 1]]->describe() + " (" +
                std::to_string(crossing[bounds[s + 1]]) + " value(s) cross)";
      g.coverage.push_back(line);
    }
    return llvm::Error::success();
  }

  /// Positions [from, to)'s cost, as the stage report says it.
  std::string report(int64_t from, int64_t to) const {
    NodeCost c = costs_[to] - costs_[from];
    char line[160];
    std::snprintf(line, sizeof line, "%.3g GFLOP, %.3g MB moved, parameters %.3g MB, stashed %.3g MB per micro-batch",
                  c.flops / 1e9, c.bytes / 1e6, c.parameters / 1e6, c.stashed / 1e6);
    return line;
  }

  /// Stages cut right before the named nodes (cuts=...), in program order.
  llvm::Error cutAt(Graph &g, const std::vector<Node *> &order, const std::vector<double> &prefix) {
    std::vector<int64_t> bounds{0};
    for (const std::string &cut : cuts_) {
      auto it = llvm::find_if(order, [&](const Node *n) { return n->name() == cut; });
      if (it == order.end())
        return passError(name(), "cuts: no node named '" + cut + "' reads a weight or another such node (the "
                                 "names are the loc(...) of `partita compile --print-ir`)");
      int64_t at = it - order.begin();
      if (at <= bounds.back())
        return passError(name(), "cuts: node '" + cut + "' does not come after the previous cut: the stages "
                                 "would be empty or out of order");
      bounds.push_back(at);
    }
    bounds.push_back(static_cast<int64_t>(order.size()));
    g.coverage.push_back("pipeline: " + std::to_string(pp_) + " stages, cut before the named nodes");
    for (int64_t s = 0; s < pp_; ++s) {
      for (int64_t i = bounds[s]; i < bounds[s + 1]; ++i)
        order[i]->setAttr(kStageAttr, Attribute::ofInt(s));
      g.coverage.push_back("pipeline stage " + std::to_string(s) + ": " +
                           std::to_string(bounds[s + 1] - bounds[s]) + " nodes from " + order[bounds[s]]->describe() +
                           ", " + report(bounds[s], bounds[s + 1]));
    }
    return llvm::Error::success();
  }

  /// pp - 1 of the candidate cuts minimising the largest stage cost.
  std::vector<int64_t> balance(const std::vector<int64_t> &cuts, const std::vector<double> &prefix,
                               int64_t count) const {
    // Stage boundaries: position 0, candidate cuts, position count.
    std::vector<int64_t> at{0};
    at.insert(at.end(), cuts.begin(), cuts.end());
    at.push_back(count);
    const size_t n = at.size();
    const double inf = std::numeric_limits<double>::infinity();
    // best[s][j]: the slowest of stages 0..s when stage s ends at at[j].
    std::vector<std::vector<double>> best(pp_, std::vector<double>(n, inf));
    std::vector<std::vector<size_t>> from(pp_, std::vector<size_t>(n, 0));
    for (size_t j = 1; j < n; ++j)
      best[0][j] = prefix[at[j]];
    for (int64_t s = 1; s < pp_; ++s)
      for (size_t j = 1; j < n; ++j)
        for (size_t i = 1; i < j; ++i) {
          double worst = std::max(best[s - 1][i], prefix[at[j]] - prefix[at[i]]);
          if (worst < best[s][j]) {
            best[s][j] = worst;
            from[s][j] = i;
          }
        }
    std::vector<int64_t> chosen(pp_ - 1);
    size_t j = n - 1;
    for (int64_t s = pp_ - 1; s > 0; --s) {
      j = from[s][j];
      chosen[s - 1] = static_cast<int64_t>(j) - 1; // at[j] is cuts[j - 1]
    }
    return chosen;
  }

  PassOption<int64_t> pp_{this, "pp", 1, "the number of stages", atLeast<int64_t>(1)};
  PassOption<std::vector<int64_t>> layersOption_{
      this, "layers", {}, "layers per stage (3,4,4,3) instead of the balance", eachAtLeast<int64_t>(1)};
  PassOption<bool> equal_{this, "equal", false,
                          "as many layers on every stage (interleaving), refused when they do not divide"};
  PassOption<std::vector<std::string>> cutsOption_{
      this, "cuts", {}, "stages start right before these nodes instead of the balance"};
  PassOption<double> intensity_{this, "intensity", kDefaultIntensity,
                                "FLOP per byte moved, the device's machine balance", atLeast(0.0)};
  std::vector<NodeCost> costs_; // prefix sums over the staged nodes
  std::vector<int64_t> layers_; // layers= as the run takes it (or derived)
  std::vector<std::string> cuts_; // cuts=
};

} // namespace

PassInfo assignStagesPass() {
  return {"assign-stages", "Place every forward node on a pipeline stage, cut between layers, balanced by cost",
          "On the forward graph (before autodiff): sets the `stage` attribute of every node that reads a weight "
          "or another such node; cuts only between layers (numbered module paths, \"/h.3/...\", else the "
          "blocks the dataflow repeats: LayerStructure.h), where the fewest values cross, choosing the "
          "boundaries that minimise the slowest stage's roofline time (StageCost.h); the embedding "
          "stays on the first stage, the head and loss on the last. Nodes reading only inputs and constants get "
          "no stage. Adds a line per stage to the coverage report.",
          [] { return std::make_unique<AssignStages>(); }};
}

} // namespace partita
