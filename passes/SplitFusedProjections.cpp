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
// A projection viewed as [.., 3, heads, head_dim] and taken apart along the 3
// becomes three, reshaped to [.., 1, heads, head_dim] and concatenated.
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
                                lin->name() + "#" + std::to_string(begin));
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
                                lin->name() + "#" + std::to_string(offset / std::max<int64_t>(width, 1)));
      part->output()->type() = piece->type();
      g.replaceAllUsesWith(piece, part->output(), /*takeName=*/true);
      offset += width;
    }
    g.eraseNode(split);
    g.eraseNode(lin);
  }
}

/// Whether every use of `v` (through Transposes, which move `axis`) takes
/// pieces of it along `axis`: a Split along it, a Gather or Slice of it.
static bool selectedAlong(const Value *v, int64_t axis, int depth = 0) {
  if (depth > 4 || v->users().empty())
    return false;
  for (const Node *u : v->users()) {
    int64_t rank = u->input(0) ? u->input(0)->type().rank() : 0;
    if (u->input(0) != v)
      return false;
    if (u->is("Transpose")) {
      std::vector<int64_t> perm = transposePerm(*u);
      int64_t moved = std::find(perm.begin(), perm.end(), axis) - perm.begin();
      if (!selectedAlong(u->output(), moved, depth + 1))
        return false;
    } else if (u->is("Split") || u->is("Gather")) {
      if (normalizeAxis(u->intAttr("axis", 0), rank) != axis)
        return false;
    } else if (u->is("Slice")) {
      const Tensor *axes = u->input(3) ? constantValue(u->input(3)) : nullptr;
      if (!axes || axes->numel() != 1 || normalizeAxis(axes->intAt(0), rank) != axis)
        return false;
    } else {
      return false;
    }
  }
  return true;
}

/// A projection whose features are regrouped as [a, ...] by a Reshape and
/// then taken apart along the a axis ([3, heads, head_dim]: timm's and
/// Megatron's older fused q/k/v, viewed [B, T, 3, H, hd], permuted and
/// unbound) becomes a projections over contiguous views of the weight, each
/// reshaped with a 1 for that axis and concatenated along it. The function is
/// unchanged; a tensor-parallel split of the heads then falls inside each
/// piece (the fused weight's columns for one rank's heads are strided: a
/// contiguous split would hand each rank a wrong mix of q, k and v).
void unfuseReshapedProjections(Graph &g) {
  for (Node *reshape : g.nodes()) {
    if (reshape->isErased() || !reshape->is("Reshape"))
      continue;
    Node *lin = reshape->input(0)->definingNode();
    Node *w = lin ? projectionWeight(lin) : nullptr;
    if (!w || !lin->is("Linear", "partita") || !singleUser(g, lin->output()) || g.isGraphOutput(lin->output()))
      continue;
    Node *b = lin->numInputs() > 2 && lin->input(2) ? lin->input(2)->definingNode() : nullptr;
    if (lin->numInputs() > 2 && lin->input(2) && (!b || !b->is("Weight")))
      continue;
    // The output dims the features spread over: the trailing ones whose product is F.
    const Shape &in = lin->output()->type().shape, &out = reshape->output()->type().shape;
    if (in.empty() || out.empty())
      continue;
    int64_t features = in.back(), product = 1, first = static_cast<int64_t>(out.size());
    while (first > 0 && product < features)
      product *= out[--first];
    if (product != features || first + 1 >= static_cast<int64_t>(out.size()) || out[first] < 2 ||
        !selectedAlong(reshape->output(), first))
      continue;
    bool leading = true; // the dims before them are the projection's own
    for (int64_t d = 0; d < first; ++d)
      leading &= d < static_cast<int64_t>(in.size()) - 1 && in[d] == out[d];
    if (!leading || first != static_cast<int64_t>(in.size()) - 1)
      continue;
    int64_t pieces = out[first], width = features / pieces, k = w->output()->type().shape[0];
    Shape pieceShape = out;
    pieceShape[first] = 1;
    Shape linShape = in;
    linShape.back() = width;
    std::vector<Value *> parts;
    for (int64_t i = 0; i < pieces; ++i) {
      std::vector<Value *> ins = {lin->input(0), weightView(g, w, {0, i * width}, {k, width})};
      if (b)
        ins.push_back(weightView(g, b, {i * width}, {width}));
      std::string base = reshape->output()->name() + "#" + std::to_string(i);
      Node *part = g.createNode("Linear", ins, {base + ".proj"}, "partita", lin->name() + "#" + std::to_string(i));
      part->output()->type() = lin->output()->type();
      part->output()->type().shape = linShape;
      Node *view = g.createNode("Reshape", {part->output(), g.createShapeConstant(pieceShape, base + ".shape")},
                                {base + ".view"}, "", reshape->name() + "#" + std::to_string(i));
      view->output()->type() = reshape->output()->type();
      view->output()->type().shape = pieceShape;
      parts.push_back(view->output());
    }
    Node *concat = g.createNode("Concat", parts, {reshape->output()->name() + ".pieces"}, "", reshape->name() + ".concat");
    concat->setAttr("axis", Attribute::ofInt(first));
    concat->output()->type() = reshape->output()->type();
    g.replaceAllUsesWith(reshape->output(), concat->output(), /*takeName=*/true);
    g.eraseNode(reshape);
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
  unfuseReshapedProjections(g);
}

PassInfo splitFusedProjectionsPass() {
  return {"split-fused-projections", "Cut fused or packed projections into one per piece",
          "Linear followed by Split or Slices along its features becomes one Linear per piece over "
          "views of the weight and bias (no bytes move).",
          [] { return std::make_unique<SplitFusedProjections>(); }};
}

} // namespace partita
