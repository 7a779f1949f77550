//===- SplitFusedProjections.cpp - split-fused-projections pass -----------===//
//
// A projection whose output is cut into pieces along its features (fused
// q/k/v by Split, nn.MultiheadAttention's packed projection by Slices) becomes
// one projection per piece over views of the weight and bias. The function is
// unchanged; each piece can then be sharded on its own (a contiguous column
// split of the fused weight would hand a rank a wrong mix of q, k and v), and
// training updates the pieces as separate parameters (AdamW is elementwise).
//
//   %qkv = partita.Linear(%h, %w, %b) ; %q, %k, %v = Split(%qkv)
//     →  %q = partita.Linear(%h, %"w[0:32,0:32]", %"b[0:32]") ...
//===----------------------------------------------------------------------===//
#include "passes/SplitFusedProjections.h"
#include "compiler/ops/OpRegistry.h"
#include "passes/PatternMatch.h"
#include "passes/Passes.h"
#include <algorithm>
#include <optional>

namespace partita {

namespace {

Value *weightView(Graph &g, Node *weight, llvm::ArrayRef<int64_t> start, llvm::ArrayRef<int64_t> size) {
  std::string base = weight->stringAttr("name", "");
  return getOrCreateWeight(g, weightViewName(base, start, size), g.weights.find(base)->view(start, size));
}

/// The [begin, end) of the last axis a unit-step Slice keeps, or nullopt.
static std::optional<std::pair<int64_t, int64_t>> lastAxisSlice(const Node *s) {
  int64_t rank = s->input(0)->type().rank(), dim = s->input(0)->type().shape.back();
  const Tensor *starts = constantValue(s->input(1)), *ends = constantValue(s->input(2));
  const Tensor *axes = s->input(3) ? constantValue(s->input(3)) : nullptr;
  const Tensor *steps = s->input(4) ? constantValue(s->input(4)) : nullptr;
  if (!starts || !ends || starts->numel() != 1 || (s->input(3) && !axes) || (s->input(4) && !steps))
    return std::nullopt;
  if ((axes ? normalizeAxis(axes->intAt(0), rank) : 0) != rank - 1 || (steps && steps->intAt(0) != 1))
    return std::nullopt;
  int64_t b = std::clamp<int64_t>(starts->intAt(0) < 0 ? starts->intAt(0) + dim : starts->intAt(0), 0, dim);
  int64_t e = std::clamp<int64_t>(ends->intAt(0) < 0 ? ends->intAt(0) + dim : ends->intAt(0), 0, dim);
  return std::make_pair(b, e);
}

/// Slices of a projection's output along its features become projections
/// over views of the weight and bias (nn.MultiheadAttention's packed q/k/v).
void unfuseSlicedProjections(Graph &g) {
  for (Node *lin : g.nodes()) {
    Node *w = lin->isErased() ? nullptr : projectionWeight(lin);
    if (!w || !lin->is("Linear", "partita") || g.isGraphOutput(lin->output()))
      continue;
    Node *b = lin->input(2)->definingNode();
    std::vector<Node *> slices(lin->output()->users().begin(), lin->output()->users().end());
    bool all = b && b->is("Weight") && !slices.empty();
    for (Node *s : slices)
      all &= s->is("Slice") && s->input(0) == lin->output() && lastAxisSlice(s).has_value();
    if (!all)
      continue;
    int64_t k = w->output()->type().shape[0];
    for (Node *s : slices) {
      auto [begin, end] = *lastAxisSlice(s);
      Value *wv = weightView(g, w, {0, begin}, {k, end - begin});
      Value *bv = weightView(g, b, {begin}, {end - begin});
      Node *part = g.createNode("Linear", {lin->input(0), wv, bv}, {s->output()->name() + ".proj"}, "partita",
                                lin->name() + "." + std::to_string(begin));
      part->output()->type() = s->output()->type();
      g.replaceAllUsesWith(s->output(), part->output(), /*takeName=*/true);
      g.eraseNode(s);
    }
    g.eraseNode(lin);
  }
}

/// Linear(h, W[K,N], b) → Split(last axis) becomes one Linear per piece over
/// views of W and b.
void unfuseSplitProjections(Graph &g) {
  for (Node *split : g.nodes()) {
    if (!split->is("Split"))
      continue;
    Node *lin = split->input(0)->definingNode();
    Node *w = lin ? projectionWeight(lin) : nullptr;
    int64_t rank = split->input(0)->type().rank();
    if (!w || !lin->is("Linear", "partita") || normalizeAxis(split->intAttr("axis", 0), rank) != rank - 1 ||
        !singleUser(g, lin->output()))
      continue;
    Node *b = lin->input(2)->definingNode();
    if (!b || !b->is("Weight"))
      continue;
    int64_t offset = 0, k = w->output()->type().shape[0];
    for (Value *piece : split->outputs()) {
      int64_t width = piece->type().shape.back();
      Value *wv = weightView(g, w, {0, offset}, {k, width});
      Value *bv = weightView(g, b, {offset}, {width});
      Node *part = g.createNode("Linear", {lin->input(0), wv, bv}, {piece->name() + ".proj"}, "partita",
                                lin->name() + "." + std::to_string(offset / std::max<int64_t>(width, 1)));
      part->output()->type() = piece->type();
      g.replaceAllUsesWith(piece, part->output(), /*takeName=*/true);
      offset += width;
    }
    g.eraseNode(split);
    g.eraseNode(lin);
  }
}


class SplitFusedProjections : public Pass {
public:
  llvm::StringRef name() const override { return "split-fused-projections"; }
  llvm::Error run(Graph &g) override {
    splitFusedProjections(g);
    return g.sortTopologically();
  }
};

} // namespace

void splitFusedProjections(Graph &g) {
  unfuseSplitProjections(g);
  unfuseSlicedProjections(g);
}

PassInfo splitFusedProjectionsPass() {
  return {"split-fused-projections", "Cut fused or packed projections into one per piece",
          "Linear followed by Split or Slices along its features becomes one Linear per piece over "
          "views of the weight and bias (no bytes move).",
          "", [] { return std::make_unique<SplitFusedProjections>(); }};
}

} // namespace partita
