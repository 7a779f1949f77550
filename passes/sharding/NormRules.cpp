//===- NormRules.cpp - Softmax, LayerNormalization, reductions ------------===//
//
// Normalisations keep any split outside the dims they normalise over;
// reductions keep splits of the dims they do not reduce, and ReduceSum over
// a split dim yields a partial sum (ReduceMax: a partial max, as in Megatron's
// vocab-parallel cross-entropy).
//===----------------------------------------------------------------------===//
#include "compiler/ops/OpRegistry.h"
#include "passes/sharding/ShardingRules.h"

namespace partita {

namespace {

/// First dim the op normalises over (Softmax: only `axis`; LayerNorm: `axis`..end).
bool normalised(const RuleContext &c, int64_t d) {
  int64_t axis = normalizeAxis(c.node.intAttr("axis", -1), c.rank(0));
  return c.node.is("LayerNormalization") ? d >= axis : d == axis;
}

RuleResult normForward(const RuleContext &c) {
  const Layout &x = c.actual[0];
  if (x.dim >= 0 && !normalised(c, x.dim)) {
    std::vector<Layout> ops(c.node.numInputs(), Layout::replicated());
    ops[0] = x;
    return RuleResult{ops, std::vector<Layout>(c.node.numOutputs(), x)};
  }
  return allReplicated(c.node);
}

std::optional<std::vector<Layout>> normBackward(const RuleContext &c, const Layout &want, std::string &why) {
  if (want.dim < 0 || normalised(c, want.dim)) {
    why = "node " + c.node.describe() + " normalises over the dimension that would be sharded";
    return std::nullopt;
  }
  std::vector<Layout> ops(c.node.numInputs(), Layout::replicated());
  ops[0] = want;
  return ops;
}

std::vector<bool> reducedDims(const RuleContext &c) {
  std::vector<int64_t> axes = c.node.intsAttr("axes");
  if (c.node.input(1))
    if (const Tensor *t = constantValue(c.node.input(1)))
      axes = t->toInts();
  std::vector<bool> r(c.rank(0), axes.empty() && !c.node.intAttr("noop_with_empty_axes", 0));
  for (int64_t a : axes)
    if (int64_t ax = normalizeAxis(a, c.rank(0)); ax >= 0)
      r[ax] = true;
  return r;
}

RuleResult reduceForward(const RuleContext &c) {
  const Layout &x = c.actual[0];
  bool sum = c.node.is("ReduceSum"), max = c.node.is("ReduceMax");
  std::vector<Layout> ops(c.node.numInputs(), Layout::replicated());
  if ((x.isPartialSum() && sum) || (x.partial && x.max && max)) {
    ops[0] = x;
    return RuleResult{ops, {x}};
  }
  if (x.dim < 0)
    return allReplicated(c.node);
  auto reduced = reducedDims(c);
  ops[0] = x;
  if (reduced[x.dim])
    // Over a split dim a sum or max is a per-rank partial, reduced later.
    return sum ? RuleResult{ops, {Layout::partialSum()}}
               : max ? RuleResult{ops, {Layout::partialMax()}} : allReplicated(c.node);
  int64_t out = x.dim;
  if (!c.node.intAttr("keepdims", 1))
    for (int64_t d = 0; d < x.dim; ++d)
      out -= reduced[d];
  return RuleResult{ops, {Layout::split(out)}};
}

} // namespace

void addNormRules(llvm::StringMap<ShardingRule> &t) {
  for (const char *op : {"Softmax", "LogSoftmax", "LayerNormalization"})
    t[op] = ShardingRule{normForward, normBackward, true};
  for (const char *op : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin"})
    t[op] = ShardingRule{reduceForward, {}};
}

} // namespace partita
