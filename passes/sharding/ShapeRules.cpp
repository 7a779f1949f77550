//===- ShapeRules.cpp - Reshape, Transpose, Split, Concat, Slice, (Un)Squeeze, Gather, Expand --===//
#include "compiler/ops/OpRegistry.h"
#include "passes/sharding/ShardingRules.h"
#include <algorithm>

namespace partita {

namespace {

std::vector<Layout> replicatedExcept0(const RuleContext &c, const Layout &l0) {
  std::vector<Layout> ops(c.node.numInputs(), Layout::replicated());
  if (!ops.empty())
    ops[0] = l0;
  return ops;
}

RuleResult same(const RuleContext &c, const Layout &l0, const Layout &out) {
  return RuleResult{replicatedExcept0(c, l0), std::vector<Layout>(c.node.numOutputs(), out)};
}

// ---- Reshape -------------------------------------------------------------------
struct Group {
  int64_t inBegin, inEnd, outBegin, outEnd;
};

/// Groups of input and output dims with equal products (a reshape only
/// regroups dims within a group).
std::vector<Group> reshapeGroups(const Shape &in, const Shape &out) {
  std::vector<Group> groups;
  int64_t n = static_cast<int64_t>(in.size()), m = static_cast<int64_t>(out.size()), i = 0, j = 0;
  while (i < n || j < m) {
    Group g{i, 0, j, 0};
    int64_t pi = i < n ? in[i++] : 1, pj = j < m ? out[j++] : 1;
    while (pi != pj && (i < n || j < m)) {
      if ((pi < pj && i < n) || j >= m)
        pi *= in[i++];
      else
        pj *= out[j++];
    }
    g.inEnd = i;
    g.outEnd = j;
    groups.push_back(g);
  }
  return groups;
}

/// Where a split of `from`'s dim `k` (outer factor `outer`) lands in `to`.
/// Inside a regrouping, a split is the same partition of elements iff its
/// prefix (product of the dims before it, times its outer factor) is the
/// same: find the `to` dim and outer factor with that prefix whose remaining
/// size still divides into `parts`.
std::optional<Layout> carrySplit(const Shape &from, const Shape &to, int64_t k, int64_t outer, int64_t parts) {
  for (const Group &g : reshapeGroups(from, to)) {
    if (k < g.inBegin || k >= g.inEnd)
      continue;
    if (from[k] % outer || (from[k] / outer) % parts)
      return std::nullopt;
    int64_t prefix = outer;
    for (int64_t d = g.inBegin; d < k; ++d)
      prefix *= from[d];
    int64_t before = 1;
    for (int64_t j = g.outBegin; j < g.outEnd; before *= to[j], ++j) {
      if (prefix % before)
        break;
      int64_t o = prefix / before;
      if (to[j] % o == 0 && (to[j] / o) % parts == 0)
        return Layout::split(j, o);
    }
    return std::nullopt;
  }
  return std::nullopt;
}

RuleResult reshapeForward(const RuleContext &c) {
  const Layout &in = c.actual[0];
  if (in.partial || in.dim < 0)
    return same(c, in, in);
  auto out = carrySplit(c.shape(0), c.outShape(), in.dim, in.outer, c.parts);
  return out ? same(c, in, *out) : allReplicated(c.node);
}

std::optional<std::vector<Layout>> reshapeBackward(const RuleContext &c, const Layout &want, std::string &why) {
  auto in = want.dim >= 0 ? carrySplit(c.outShape(), c.shape(0), want.dim, want.outer, c.parts) : std::nullopt;
  if (!in) {
    why = "node " + c.node.describe() + " cannot produce a split of dimension " + std::to_string(want.dim) +
          " of " + shapeString(c.outShape()) + " from " + shapeString(c.shape(0)) + " into " +
          std::to_string(c.parts) + " parts (the regrouped dimensions do not divide)";
    return std::nullopt;
  }
  return replicatedExcept0(c, *in);
}

// ---- Transpose -----------------------------------------------------------------------
std::vector<int64_t> permOf(const RuleContext &c) { return transposePerm(c.node); }

RuleResult transposeForward(const RuleContext &c) {
  const Layout &in = c.actual[0];
  if (in.dim < 0)
    return same(c, in, in);
  auto perm = permOf(c);
  int64_t j = std::find(perm.begin(), perm.end(), in.dim) - perm.begin();
  return same(c, in, Layout::split(j, in.outer));
}

std::optional<std::vector<Layout>> transposeBackward(const RuleContext &c, const Layout &want, std::string &) {
  return replicatedExcept0(c, Layout::split(permOf(c)[want.dim], want.outer));
}

// ---- Split / Concat / Slice --------------------------------------------------------------
int64_t axisOf(const RuleContext &c, int64_t rank) { return normalizeAxis(c.node.intAttr("axis", 0), rank); }

RuleResult splitForward(const RuleContext &c) {
  const Layout &in = c.actual[0];
  if (in.partial || (in.dim >= 0 && in.dim != axisOf(c, c.rank(0))))
    return same(c, in, in);
  return allReplicated(c.node);
}

std::optional<std::vector<Layout>> splitBackward(const RuleContext &c, const Layout &want, std::string &why) {
  if (want.dim == axisOf(c, c.rank(0))) {
    why = "node " + c.node.describe() + " splits along the dimension that would be sharded";
    return std::nullopt;
  }
  return replicatedExcept0(c, want);
}

// Concatenating along an axis other than the split one is local: every
// operand takes the split (a replicated one is cut to its block locally, no
// communication) and each rank concatenates its blocks. Along the split axis,
// operands split into blocks of one size B (N_i / outer_i) concatenate into
// a split with outer factor sum(N_i / B): rank r's local concatenation is its
// part of every block, in order, which is that layout's local value.
std::optional<Layout> concatAlongSplit(const RuleContext &c, int64_t axis) {
  int64_t block = -1, outer = 0;
  for (size_t i = 0; i < c.actual.size(); ++i) {
    const Layout &l = c.actual[i];
    if (l.partial || l.dim != axis)
      return std::nullopt;
    int64_t b = c.shape(i)[axis] / l.outer;
    if (block >= 0 && b != block)
      return std::nullopt;
    block = b;
    outer += l.outer;
  }
  return block > 0 ? std::optional<Layout>(Layout::split(axis, outer)) : std::nullopt;
}

RuleResult concatForward(const RuleContext &c) {
  int64_t axis = axisOf(c, c.rank(0));
  const Layout &first = c.actual[0];
  if (first.partial && std::all_of(c.actual.begin(), c.actual.end(), [&](const Layout &l) { return l == first; }))
    return RuleResult{c.actual, {first}}; // concatenation is linear
  for (const Layout &l : c.actual)
    if (!l.partial && l.dim >= 0 && l.dim != axis)
      return RuleResult{std::vector<Layout>(c.node.numInputs(), l), {l}};
  if (auto out = concatAlongSplit(c, axis))
    return RuleResult{c.actual, {*out}};
  return allReplicated(c.node);
}

std::optional<std::vector<Layout>> concatBackward(const RuleContext &c, const Layout &want, std::string &why) {
  int64_t axis = axisOf(c, c.rank(0));
  if (want.dim != axis)
    return std::vector<Layout>(c.node.numInputs(), want);
  // Along the split axis: each operand must be whole blocks of the result's.
  int64_t block = c.outShape()[axis] / want.outer;
  std::vector<Layout> ops;
  for (size_t i = 0; i < c.node.numInputs(); ++i) {
    if (c.shape(i)[axis] % block) {
      why = "node " + c.node.describe() + " concatenates along the dimension that would be sharded, and operand " +
            std::to_string(i) + " is not whole blocks of it";
      return std::nullopt;
    }
    ops.push_back(Layout::split(axis, c.shape(i)[axis] / block));
  }
  return ops;
}

/// Whether the Slice changes dimension `d` (anything but start 0, end past
/// the last element, step 1; unknown bounds count as a change). A slice
/// that keeps the size can still reverse or shift the dimension.
bool sliced(const RuleContext &c, int64_t d) {
  const Tensor *starts = constantValue(c.node.input(1));
  const Tensor *ends = constantValue(c.node.input(2));
  const Tensor *axesT = c.node.input(3) ? constantValue(c.node.input(3)) : nullptr;
  const Tensor *steps = c.node.input(4) ? constantValue(c.node.input(4)) : nullptr;
  if (!starts || !ends || (c.node.input(3) && !axesT) || (c.node.input(4) && !steps))
    return true;
  int64_t size = c.shape(0)[d];
  for (int64_t k = 0; k < starts->numel(); ++k) {
    if ((axesT ? normalizeAxis(axesT->intAt(k), c.rank(0)) : k) != d)
      continue;
    int64_t begin = starts->intAt(k), end = ends->intAt(k);
    if (begin < 0)
      begin += size;
    if (end < 0)
      end += size;
    if ((steps && steps->intAt(k) != 1) || std::max<int64_t>(begin, 0) != 0 || end < size)
      return true;
  }
  return false;
}

// A slice is local on every dimension it leaves whole, whatever the split's
// outer factor; one that cuts the split dimension gathers it first.
RuleResult sliceForward(const RuleContext &c) {
  const Layout &in = c.actual[0];
  if (in.partial || (in.dim >= 0 && !sliced(c, in.dim)))
    return same(c, in, in);
  return allReplicated(c.node);
}

std::optional<std::vector<Layout>> sliceBackward(const RuleContext &c, const Layout &want, std::string &why) {
  if (sliced(c, want.dim)) {
    why = "node " + c.node.describe() + " slices the dimension that would be sharded";
    return std::nullopt;
  }
  return replicatedExcept0(c, want);
}

// ---- Squeeze / Unsqueeze --------------------------------------------------------------------
/// Maps dims between a (un)squeezed value and its input by skipping the unit axes.
int64_t mapSqueeze(const RuleContext &c, int64_t d, bool towardOutput) {
  std::vector<int64_t> axes;
  if (const Tensor *t = c.node.input(1) ? constantValue(c.node.input(1)) : nullptr)
    axes = t->toInts();
  bool unsqueeze = c.node.is("Unsqueeze");
  int64_t bigRank = unsqueeze ? static_cast<int64_t>(c.outShape().size()) : c.rank(0);
  std::vector<bool> unit(bigRank, false);
  if (axes.empty() && !unsqueeze)
    for (int64_t i = 0; i < bigRank; ++i)
      unit[i] = c.shape(0)[i] == 1;
  for (int64_t a : axes)
    unit[normalizeAxis(a, bigRank)] = true;
  // big dim index <-> small dim index
  bool fromBig = unsqueeze != towardOutput;
  int64_t small = 0;
  for (int64_t b = 0; b < bigRank; ++b) {
    if (unit[b])
      continue;
    if (fromBig ? b == d : small == d)
      return fromBig ? small : b;
    ++small;
  }
  return -1;
}

RuleResult squeezeForward(const RuleContext &c) {
  const Layout &in = c.actual[0];
  if (in.dim < 0)
    return same(c, in, in);
  int64_t d = mapSqueeze(c, in.dim, true);
  return d >= 0 ? same(c, in, Layout::split(d)) : allReplicated(c.node);
}

std::optional<std::vector<Layout>> squeezeBackward(const RuleContext &c, const Layout &want, std::string &why) {
  int64_t d = mapSqueeze(c, want.dim, false);
  if (d < 0) {
    why = "node " + c.node.describe() + " cannot carry the split";
    return std::nullopt;
  }
  return replicatedExcept0(c, Layout::split(d));
}

// ---- Gather ------------------------------------------------------------------------------------
RuleResult gatherForward(const RuleContext &c) {
  const Layout &data = c.actual[0], &ids = c.actual[1];
  int64_t axis = axisOf(c, c.rank(0)), idsRank = c.rank(1);
  // Vocab-parallel embedding: each rank gathers the rows it holds; the rest
  // contribute zeros, so the result is a partial sum. Only of a stored table,
  // or its cast (mixed precision reads a half table widened): rows of an
  // activation split by batch (data parallelism) are gathered.
  const Node *table = c.node.input(0)->definingNode();
  while (table && table->is("Cast") && table->numInputs() == 1)
    table = table->input(0)->definingNode();
  if (data.dim == axis && axis == 0 && ids.isReplicated() && !data.partial && table && table->is("Weight"))
    return RuleResult{{data, Layout::replicated()}, {Layout::partialSum()}};
  if (data.dim >= 0 && data.dim != axis && ids.isReplicated())
    return RuleResult{{data, ids}, {Layout::split(data.dim < axis ? data.dim : data.dim + idsRank - 1)}};
  if (ids.dim >= 0 && data.isReplicated())
    return RuleResult{{data, ids}, {Layout::split(axis + ids.dim)}};
  return allReplicated(c.node);
}

std::optional<std::vector<Layout>> gatherBackward(const RuleContext &c, const Layout &want, std::string &) {
  int64_t axis = axisOf(c, c.rank(0)), idsRank = c.rank(1);
  if (want.dim < axis)
    return std::vector<Layout>{Layout::split(want.dim), Layout::replicated()};
  if (want.dim >= axis + idsRank)
    return std::vector<Layout>{Layout::split(want.dim - idsRank + 1), Layout::replicated()};
  return std::vector<Layout>{Layout::replicated(), Layout::split(want.dim - axis)};
}

// The gradient of an embedding table takes the table's layout: a row
// (vocabulary) split accumulates each rank's own rows from the full ids and
// dy (localize gives it the row offset), a column split needs dy split the
// same way; no communication either way.
RuleResult embeddingGradForward(const RuleContext &c) {
  const Layout &table = c.actual[0];
  int64_t dyRank = c.rank(2);
  if (table.dim == 0 && !table.partial)
    return RuleResult{{table, Layout::replicated(), Layout::replicated()}, {table}};
  if (table.dim == 1 && !table.partial)
    return RuleResult{{table, Layout::replicated(), Layout::split(dyRank - 1)}, {table}};
  // Ids (and dy) split along a token dimension (data parallelism's batch):
  // each rank scatters its own tokens into a whole table, a partial sum.
  const Layout &ids = c.actual[1], &dy = c.actual[2];
  int64_t token = ids.dim >= 0 && ids.outer == 1                       ? ids.dim
                  : dy.dim >= 0 && dy.dim < c.rank(1) && dy.outer == 1 ? dy.dim
                                                                        : -1;
  if (table.isReplicated() && token >= 0)
    return RuleResult{{table, Layout::split(token), Layout::split(token)}, {Layout::partialSum()}};
  return allReplicated(c.node);
}

RuleResult expandForward(const RuleContext &c) {
  const Layout &in = c.actual[0];
  if (in.dim < 0)
    return same(c, in, in);
  int64_t mapped = in.dim + static_cast<int64_t>(c.outShape().size()) - c.rank(0);
  if (c.shape(0)[in.dim] == c.outShape()[mapped])
    return same(c, in, Layout::split(mapped));
  return allReplicated(c.node);
}

std::optional<std::vector<Layout>> expandBackward(const RuleContext &c, const Layout &want, std::string &why) {
  int64_t d = want.dim - (static_cast<int64_t>(c.outShape().size()) - c.rank(0));
  std::vector<Layout> ops(c.node.numInputs(), Layout::replicated());
  if (d >= 0 && c.shape(0)[d] == c.outShape()[want.dim])
    ops[0] = Layout::split(d, want.outer);
  else if (want.outer != 1) {
    why = "node " + c.node.describe() + " cannot carry a strided split";
    return std::nullopt;
  }
  return ops; // broadcast along the split dim: every rank expands the same value
}

} // namespace

void addShapeRules(llvm::StringMap<ShardingRule> &t) {
  t["Reshape"] = ShardingRule{reshapeForward, reshapeBackward, true};
  t["Flatten"] = ShardingRule{reshapeForward, reshapeBackward, true};
  t["Transpose"] = ShardingRule{transposeForward, transposeBackward, true};
  t["Split"] = ShardingRule{splitForward, splitBackward, true};
  t["Concat"] = ShardingRule{concatForward, concatBackward, true};
  t["Slice"] = ShardingRule{sliceForward, sliceBackward, true};
  t["Squeeze"] = ShardingRule{squeezeForward, squeezeBackward};
  t["Unsqueeze"] = ShardingRule{squeezeForward, squeezeBackward};
  t["Gather"] = ShardingRule{gatherForward, gatherBackward};
  t["Expand"] = ShardingRule{expandForward, expandBackward};
  t["partita.EmbeddingGrad"] = ShardingRule{embeddingGradForward, {}};
}

} // namespace partita
