//===- ElementwiseRules.cpp - unary, binary (broadcasting), Where ---------===//
//
// An elementwise op keeps a split: operands that span the split dimension are
// split the same way (a replicated one is sliced locally, no communication);
// operands broadcast along it stay replicated. Partial sums pass through the
// ops that are linear in them: Neg/Identity/Cast, Add/Sub of partials, Mul by
// a replicated factor, Div of a partial by a replicated divisor.
//===----------------------------------------------------------------------===//
#include "passes/sharding/ShardingRules.h"
#include "compiler/ops/OpRegistry.h"

namespace partita {

namespace {

/// Operand layouts that give result dim `outDim` (or R when -1).
std::vector<Layout> operandsFor(const RuleContext &c, int64_t outDim, int64_t outer = 1) {
  std::vector<Layout> ops;
  int64_t outRank = static_cast<int64_t>(c.outShape().size());
  for (size_t i = 0; i < c.node.numInputs(); ++i) {
    if (!c.node.input(i) || outDim < 0) {
      ops.push_back(Layout::replicated());
      continue;
    }
    int64_t d = outDim - (outRank - c.rank(i));
    bool spans = d >= 0 && c.shape(i)[d] == c.outShape()[outDim];
    ops.push_back(spans ? Layout::split(d, outer) : Layout::replicated());
  }
  return ops;
}

bool partialPassesThrough(const RuleContext &c) {
  const Node &n = c.node;
  auto partialAt = [&](size_t i) { return c.actual[i].isPartialSum(); };
  auto replicatedAt = [&](size_t i) { return c.actual[i].isReplicated(); };
  size_t count = n.numInputs();
  if (count == 0 || !c.node.input(0))
    return false;
  if (n.is("Neg") || n.is("Identity") || n.is("Dropout") ||
      (n.is("Cast") && isFloat(n.output()->type().dtype) && isFloat(n.input(0)->type().dtype)))
    return partialAt(0);
  if ((n.is("Add") || n.is("Sub")) && count == 2)
    return partialAt(0) && partialAt(1);
  if (n.is("Mul") && count == 2)
    return (partialAt(0) && replicatedAt(1)) || (partialAt(1) && replicatedAt(0));
  if (n.is("Div") && count == 2)
    return partialAt(0) && replicatedAt(1);
  return false;
}

RuleResult forward(const RuleContext &c) {
  RuleResult r;
  if (partialPassesThrough(c)) {
    for (const Layout &l : c.actual)
      r.operands.push_back(l.partial ? Layout::partialSum() : Layout::replicated());
    r.results.assign(c.node.numOutputs(), Layout::partialSum());
    return r;
  }
  int64_t outRank = static_cast<int64_t>(c.outShape().size()), outDim = -1, outer = 1;
  for (size_t i = 0; i < c.actual.size() && outDim < 0; ++i) {
    int64_t d = c.actual[i].dim;
    if (d < 0 || !c.node.input(i))
      continue;
    int64_t mapped = d + outRank - c.rank(i);
    if (c.shape(i)[d] == c.outShape()[mapped] && c.divisible(c.outShape()[mapped] / c.actual[i].outer)) {
      outDim = mapped;
      outer = c.actual[i].outer;
    }
  }
  // A replicated operand spanning an outer-factor split is cut by a strided
  // local slice (localize writes it as reshape, slice, reshape): no communication.
  r.operands = operandsFor(c, outDim, outer);
  r.results.assign(c.node.numOutputs(), outDim >= 0 ? Layout::split(outDim, outer) : Layout::replicated());
  return r;
}

std::optional<std::vector<Layout>> backward(const RuleContext &c, const Layout &want, std::string &why) {
  if (want.partial || want.dim < 0) {
    why = "a partial sum cannot be produced by node " + c.node.describe();
    return std::nullopt;
  }
  return operandsFor(c, want.dim, want.outer);
}

} // namespace

/// Every op registered as elementwise (compiler/ops/OpRegistry.h) gets this rule.
void addElementwiseRules(llvm::StringMap<ShardingRule> &t) {
  const OpRegistry &ops = OpRegistry::get();
  for (const std::string &op : ops.names())
    if (ops.find(op)->has(OpTrait::Elementwise))
      t[op] = ShardingRule{forward, backward, /*supportsOuter=*/true};
}

} // namespace partita
