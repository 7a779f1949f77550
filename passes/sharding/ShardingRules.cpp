//===- ShardingRules.cpp - the rule table ---------------------------------===//
#include "passes/sharding/ShardingRules.h"

namespace partita {

RuleResult allReplicated(const Node &n) {
  RuleResult r;
  r.operands.assign(n.numInputs(), Layout::replicated());
  r.results.assign(n.numOutputs(), Layout::replicated());
  return r;
}

static const llvm::StringMap<ShardingRule> &table() {
  static const llvm::StringMap<ShardingRule> t = [] {
    llvm::StringMap<ShardingRule> m;
    addElementwiseRules(m);
    addShapeRules(m);
    addDotRules(m);
    addNormRules(m);
    addCollectiveRules(m);
    addOptimizerRules(m);
    return m;
  }();
  return t;
}

const ShardingRule *findShardingRule(const Node &n) {
  auto it = table().find(n.qualifiedOp());
  return it == table().end() ? nullptr : &it->second;
}

RuleResult forwardLayouts(const Node &n, const std::vector<Layout> &actual, int64_t parts) {
  const ShardingRule *rule = findShardingRule(n);
  bool outerSplit = false;
  for (const Layout &l : actual)
    outerSplit |= l.dim >= 0 && l.outer != 1;
  if (!rule || (outerSplit && !rule->supportsOuter))
    return allReplicated(n);
  RuleResult r = rule->forward(RuleContext{n, actual, parts});
  r.operands.resize(n.numInputs(), Layout::replicated());
  return r;
}

std::optional<std::vector<Layout>> backwardLayouts(const Node &n, unsigned result, const Layout &want,
                                                   int64_t parts, std::string &why) {
  const ShardingRule *rule = findShardingRule(n);
  if (!rule || !rule->backward || (want.outer != 1 && !rule->supportsOuter)) {
    why = "a split cannot pass through node " + n.describe();
    return std::nullopt;
  }
  std::vector<Layout> none(n.numInputs(), Layout::replicated());
  return rule->backward(RuleContext{n, none, parts, result}, want, why);
}

} // namespace partita
