//===- ReshardPlanner.h - the one place that picks collectives ------------===//
//
// Converts a value from one layout to another along a mesh axis with the
// cheapest sequence of steps:
//   Partial -> R     all-reduce          Partial -> S(d)  reduce-scatter(d)
//   S(a)    -> R     all-gather(a)       R       -> S(d)  local slice (no communication)
//   S(a)    -> S(b)  all-gather(a), then local slice(b)
//   Partial max -> R all-reduce(max)   Partial max -> S(d)  all-reduce(max), local slice(d)
// Collective nodes are made by one factory, makeCollective().
//===----------------------------------------------------------------------===//
#pragma once
#include "passes/sharding/Layout.h"
#include "llvm/Support/Error.h"

namespace partita {

enum class CollectiveKind { AllReduce, AllGather, ReduceScatter, ShardSlice };

struct ReshardStep {
  CollectiveKind kind;
  int64_t dim = -1;  // gathered / scattered / sliced dimension
  int64_t outer = 1; // its outer factor (Layout::outer)
  bool max = false;  // AllReduce: reduce by max instead of sum
};

llvm::Expected<std::vector<ReshardStep>> planReshard(const Layout &from, const Layout &to);

/// Creates the node for one step on `input` (global types; the result takes
/// layout `result` along `axis`).
Value *makeCollective(Graph &g, const ReshardStep &step, Value *input, llvm::StringRef axis,
                      const Layout &result, llvm::StringRef nameHint);

const char *collectiveOpName(CollectiveKind k);

} // namespace partita
