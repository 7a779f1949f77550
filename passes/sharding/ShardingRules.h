//===- ShardingRules.h - how each op carries a layout along one mesh axis --===//
//
// A forward rule takes the layouts the operands arrive with and answers the
// layouts the node needs them in (the reshard planner converts where they
// differ) and the layouts of its results, choosing per op the option that
// avoids communication. A backward rule answers which operand layouts make
// result 0 come out in a wanted layout with no communication at all; annotate
// uses it to pair column- and row-parallel projections through any chain of
// ops in between. Handlers live by op family in *Rules.cpp.
//
//===----------------------------------------------------------------------===//
#pragma once
#include "passes/sharding/Layout.h"
#include <functional>
#include <optional>

namespace partita {

struct RuleResult {
  std::vector<Layout> operands; // required; omitted operands get R
  std::vector<Layout> results;
};

struct RuleContext {
  const Node &node;
  std::vector<Layout> actual; // per operand
  int64_t parts;              // size of the mesh axis
  unsigned result = 0;        // backward: which result the wanted layout is for

  const Shape &shape(size_t i) const { return node.input(i)->type().shape; }
  const Shape &outShape(size_t i = 0) const { return node.output(i)->type().shape; }
  int64_t rank(size_t i) const { return static_cast<int64_t>(shape(i).size()); }
  bool divisible(int64_t size) const { return size % parts == 0; }
};

using ForwardRule = std::function<RuleResult(const RuleContext &)>;
/// Backward: operand layouts for `want` on result `ctx.result`, or nullopt with `why` set.
using BackwardRule =
    std::function<std::optional<std::vector<Layout>>(const RuleContext &, const Layout &want, std::string &why)>;

struct ShardingRule {
  ForwardRule forward;
  BackwardRule backward; // empty: the op cannot pass a split through
  /// Whether the rule handles splits with an outer factor (Layout::outer > 1);
  /// other ops see such operands gathered first.
  bool supportsOuter = false;
};

/// The rule for `n`'s op; ops without one compute replicated (always correct).
const ShardingRule *findShardingRule(const Node &n);
RuleResult forwardLayouts(const Node &n, const std::vector<Layout> &actual, int64_t parts);
std::optional<std::vector<Layout>> backwardLayouts(const Node &n, unsigned result, const Layout &want,
                                                   int64_t parts, std::string &why);

/// Every operand and result replicated.
RuleResult allReplicated(const Node &n);

// Handler families.
void addElementwiseRules(llvm::StringMap<ShardingRule> &t);
void addShapeRules(llvm::StringMap<ShardingRule> &t);
void addDotRules(llvm::StringMap<ShardingRule> &t);
void addNormRules(llvm::StringMap<ShardingRule> &t);
void addCollectiveRules(llvm::StringMap<ShardingRule> &t);
void addOptimizerRules(llvm::StringMap<ShardingRule> &t);

} // namespace partita
