//===- OptimizerRules.cpp - partita.AdamW ---------------------------------===//
//
// AdamW is elementwise over the parameter, its gradient and its moments, with
// the learning rate, bias corrections and gradient scale scalars: every tensor operand and
// result takes the parameter's layout (a split stays local: each rank
// updates exactly its shard), the scalars stay replicated. A partial
// gradient is reduced first (the update is not linear in it).
//===----------------------------------------------------------------------===//
#include "passes/sharding/ShardingRules.h"

namespace partita {

namespace {

constexpr size_t kParam = 3;

std::vector<Layout> operandsLike(const Node &n, const Layout &p) {
  std::vector<Layout> ops(n.numInputs(), Layout::replicated());
  for (size_t i = kParam; i < kParam + 4 && i < ops.size(); ++i)
    ops[i] = p;
  return ops;
}

RuleResult adamForward(const RuleContext &c) {
  Layout p = c.actual[kParam].partial ? Layout::replicated() : c.actual[kParam];
  return RuleResult{operandsLike(c.node, p), std::vector<Layout>(3, p)};
}

std::optional<std::vector<Layout>> adamBackward(const RuleContext &c, const Layout &want, std::string &why) {
  if (want.partial) {
    why = "AdamW's results are never partial";
    return std::nullopt;
  }
  return operandsLike(c.node, want);
}

} // namespace

void addOptimizerRules(llvm::StringMap<ShardingRule> &t) {
  t["partita.AdamW"] = ShardingRule{adamForward, adamBackward, /*supportsOuter=*/true};
}

} // namespace partita
