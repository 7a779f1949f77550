//===- ReshardPlanner.cpp -------------------------------------------------===//
#include "passes/sharding/ReshardPlanner.h"

namespace partita {

const char *collectiveOpName(CollectiveKind k) {
  switch (k) {
  case CollectiveKind::AllReduce: return "AllReduce";
  case CollectiveKind::AllGather: return "AllGather";
  case CollectiveKind::ReduceScatter: return "ReduceScatter";
  case CollectiveKind::ShardSlice: return "ShardSlice";
  }
  return "?";
}

llvm::Expected<std::vector<ReshardStep>> planReshard(const Layout &from, const Layout &to) {
  using K = CollectiveKind;
  if (from == to)
    return std::vector<ReshardStep>{};
  if (from.partial && from.max && !to.partial) {
    std::vector<ReshardStep> steps{{K::AllReduce, -1, 1, true}};
    if (to.dim >= 0)
      steps.push_back({K::ShardSlice, to.dim, to.outer});
    return steps;
  }
  if (from.partial && !from.max) {
    if (to.isReplicated())
      return std::vector<ReshardStep>{{K::AllReduce}};
    if (to.dim >= 0 && !to.partial)
      return std::vector<ReshardStep>{{K::ReduceScatter, to.dim, to.outer}};
  } else if (!to.partial) {
    std::vector<ReshardStep> steps;
    if (from.dim >= 0)
      steps.push_back({K::AllGather, from.dim, from.outer});
    if (to.dim >= 0)
      steps.push_back({K::ShardSlice, to.dim, to.outer});
    return steps;
  }
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 "no reshard from " + from.str() + " to " + to.str() +
                                     " (a partial sum or max cannot be created by communication)");
}

Value *makeCollective(Graph &g, const ReshardStep &step, Value *input, llvm::StringRef axis,
                      const Layout &result, llvm::StringRef nameHint) {
  Node *n = g.createNode(collectiveOpName(step.kind), {input}, {nameHint.str()}, "partita");
  n->setAttr("axis", Attribute::ofString(axis.str()));
  if (step.kind != CollectiveKind::AllReduce)
    n->setAttr("dim", Attribute::ofInt(step.dim));
  if (step.max)
    n->setAttr("reduce", Attribute::ofString("max"));
  if (step.outer != 1)
    n->setAttr("outer", Attribute::ofInt(step.outer));
  n->output()->type() = input->type();
  setLayout(n->output(), axis, result);
  return n->output();
}

} // namespace partita
