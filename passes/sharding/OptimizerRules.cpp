//===- OptimizerRules.cpp - partita.AdamW ---------------------------------===//
//
// AdamW is elementwise over the parameter, its gradient and its moments, with
// the learning rate and bias corrections scalars: every tensor operand and
// result takes the parameter's layout (a split stays local: each rank
// updates exactly its shard), the scalars stay replicated. A partial
// gradient is reduced first (the update is not linear in it).
//===----------------------------------------------------------------------===//
#include "passes/sharding/ShardingRules.h"

namespace partita {

namespace {

constexpr size_t kParam = 3;

std::vector<Layout> operandsLike(const Layout &p) {
  std::vector<Layout> ops(7, Layout::replicated());
  for (size_t i = kParam; i < 7; ++i)
    ops[i] = p;
  return ops;
}

RuleResult adamForward(const RuleContext &c) {
  Layout p = c.actual[kParam].partial ? Layout::replicated() : c.actual[kParam];
  return RuleResult{operandsLike(p), std::vector<Layout>(3, p)};
}

std::optional<std::vector<Layout>> adamBackward(const RuleContext &, const Layout &want, std::string &why) {
  if (want.partial) {
    why = "AdamW's results are never partial";
    return std::nullopt;
  }
  return operandsLike(want);
}

} // namespace

void addOptimizerRules(llvm::StringMap<ShardingRule> &t) {
  t["partita.AdamW"] = ShardingRule{adamForward, adamBackward, /*supportsOuter=*/true};
}

} // namespace partita
