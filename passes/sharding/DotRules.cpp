//===- DotRules.cpp - MatMul and partita.Linear ---------------------------===//
//
// Megatron's layouts are the communication-free cases of a matrix product:
// a split of the rows (M) or of a batch dim of A gives split rows of the
// result; a split of B's columns (N) gives split columns (column-parallel);
// splitting the contraction dim K of both gives a partial sum (row-parallel).
//===----------------------------------------------------------------------===//
#include "passes/sharding/ShardingRules.h"

namespace partita {

namespace {

/// Layout of a matmul operand for result dim `od` (batch dims broadcast).
Layout batchOperand(const RuleContext &c, size_t i, int64_t od, int64_t outRank, int64_t outer) {
  int64_t d = od - (outRank - c.rank(i));
  return d >= 0 && c.shape(i)[d] == c.outShape()[od] ? Layout::split(d, outer) : Layout::replicated();
}

RuleResult matmulForward(const RuleContext &c) {
  const Layout &a = c.actual[0], &b = c.actual[1];
  int64_t ra = c.rank(0), rb = c.rank(1), ro = static_cast<int64_t>(c.outShape().size());
  if (ra < 2 || rb < 2)
    return allReplicated(c.node);
  if (a.isPartialSum() && b.isReplicated())
    return RuleResult{{a, b}, {Layout::partialSum()}};
  if (b.isPartialSum() && a.isReplicated())
    return RuleResult{{a, b}, {Layout::partialSum()}};
  if (a.dim == ra - 1 && b.dim == rb - 2 && a.outer == 1 && b.outer == 1)
    return RuleResult{{a, b}, {Layout::partialSum()}};
  // A column-split right operand (a column-parallel weight) keeps its layout;
  // the left one is gathered if it came split along its rows.
  if (b.dim == rb - 1 && (a.dim < 0 || a.dim >= ra - 2))
    return RuleResult{{Layout::replicated(), b}, {Layout::split(ro - 1, b.outer)}};
  if (a.dim >= 0 && a.dim < ra - 2) {
    int64_t od = a.dim + ro - ra;
    RuleResult r{{a, batchOperand(c, 1, od, ro, a.outer)}, {Layout::split(od, a.outer)}};
    if (a.outer != 1 && r.operands[1].dim >= 0 && r.operands[1] != b)
      return allReplicated(c.node); // would need a strided slice of B
    return r;
  }
  if (b.dim >= 0 && b.dim < rb - 2) {
    int64_t od = b.dim + ro - rb;
    RuleResult r{{batchOperand(c, 0, od, ro, b.outer), b}, {Layout::split(od, b.outer)}};
    if (b.outer != 1 && r.operands[0].dim >= 0 && r.operands[0] != a)
      return allReplicated(c.node);
    return r;
  }
  if (a.dim == ra - 2)
    return RuleResult{{a, Layout::replicated()}, {Layout::split(ro - 2, a.outer)}};
  if (b.dim == rb - 1)
    return RuleResult{{Layout::replicated(), b}, {Layout::split(ro - 1, b.outer)}};
  return allReplicated(c.node);
}

std::optional<std::vector<Layout>> matmulBackward(const RuleContext &c, const Layout &want, std::string &why) {
  int64_t ra = c.rank(0), rb = c.rank(1), ro = static_cast<int64_t>(c.outShape().size());
  if (ra < 2 || rb < 2 || want.dim < 0) {
    why = "node " + c.node.describe() + " cannot produce that layout";
    return std::nullopt;
  }
  if (want.dim < ro - 2)
    return std::vector<Layout>{batchOperand(c, 0, want.dim, ro, want.outer),
                               batchOperand(c, 1, want.dim, ro, want.outer)};
  if (want.dim == ro - 2)
    return std::vector<Layout>{Layout::split(ra - 2, want.outer), Layout::replicated()};
  return std::vector<Layout>{Layout::replicated(), Layout::split(rb - 1, want.outer)};
}

/// partita.Linear(x, w[K,N], b[N]). A row-parallel Linear would add its bias on
/// every rank; annotate rewrites those into MatMul + Add, so here a split of w's
/// rows is gathered back.
RuleResult linearForward(const RuleContext &c) {
  const Layout &x = c.actual[0], &w = c.actual[1];
  int64_t last = c.rank(0) - 1;
  if (w.dim == 1)
    return RuleResult{{Layout::replicated(), w, Layout::split(0)}, {Layout::split(last)}};
  if (w.isReplicated() && x.dim >= 0 && x.dim < last)
    return RuleResult{{x, w, Layout::replicated()}, {x}};
  return allReplicated(c.node);
}

std::optional<std::vector<Layout>> linearBackward(const RuleContext &c, const Layout &want, std::string &why) {
  int64_t last = c.rank(0) - 1;
  if (want.dim == last)
    return std::vector<Layout>{Layout::replicated(), Layout::split(1), Layout::split(0)};
  if (want.dim >= 0)
    return std::vector<Layout>{Layout::split(want.dim), Layout::replicated(), Layout::replicated()};
  why = "node " + c.node.describe() + " cannot produce a partial sum";
  return std::nullopt;
}

} // namespace

void addDotRules(llvm::StringMap<ShardingRule> &t) {
  t["MatMul"] = ShardingRule{matmulForward, matmulBackward, true};
  t["partita.Linear"] = ShardingRule{linearForward, linearBackward};
}

} // namespace partita
