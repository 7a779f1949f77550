//===- CollectiveRules.cpp - collectives along another mesh axis ----------===//
//
// A collective (or a pending partita.Reshard) placed for one mesh axis is, along
// every other axis, an identity on each rank's block: it keeps a split of any
// dimension it does not itself gather, scatter or slice, and a partial sum
// passes through it (all of them are linear). So data parallelism, propagated
// after tensor parallelism's collectives exist, carries the batch split
// through them:
//   %r = partita.AllReduce(%p) {axis = "tp"} : f32[8,16,64] {S(dp),R,R}
// A split of the dimension the collective works on passes too: it is the
// major one of that dimension (propagate-sharding{major=1}, as data-parallel
// runs it), so the collective works inside each of its blocks. A strided
// split (an outer factor) is gathered first.
//===----------------------------------------------------------------------===//
#include "passes/sharding/ShardingRules.h"

namespace partita {

namespace {

RuleResult passThrough(const RuleContext &c) {
  const Layout &in = c.actual[0];
  const Node &n = c.node;
  // Sums commute with sums; a max over one axis does not commute with a sum
  // over another.
  bool reducesByMax = n.stringAttr("reduce", "sum") == "max" ||
                      (n.input(0)->sharding() && n.input(0)->sharding()->partialMax);
  if (in.partial && (in.max || reducesByMax))
    return allReplicated(n);
  if (in.dim >= 0 && in.outer != 1)
    return allReplicated(n);
  RuleResult r;
  r.operands.assign(n.numInputs(), Layout::replicated());
  r.operands[0] = in;
  r.results.assign(n.numOutputs(), in);
  return r;
}

} // namespace

void addCollectiveRules(llvm::StringMap<ShardingRule> &t) {
  for (const char *op : {"partita.Reshard", "partita.AllReduce", "partita.AllGather", "partita.ReduceScatter",
                         "partita.ShardSlice", "partita.SumCopies"})
    t[op] = ShardingRule{passThrough, {}};
}

} // namespace partita
