//===- ReshardPlanner.h - the one place that picks collectives ------------===//
//
// Converts a value from one sharding to another with the cheapest sequence of
// steps, one mesh axis per step:
//   Partial -> R     all-reduce          Partial -> S(d)  reduce-scatter(d)
//   S(a)    -> R     all-gather(a)       R       -> S(d)  local slice (no communication)
//   S(a)    -> S(b)  all-gather(a), then local slice(b)
//   Partial max -> R all-reduce(max)   Partial max -> S(d)  all-reduce(max), local slice(d)
// Axes the two shardings agree on are left alone, so converting over tp a
// value that is also S(dp) keeps it S(dp). Where a dimension is split over
// several axes (major to minor) only its minor-most axis can be gathered and a
// new axis is added as the minor-most, so the steps on one dimension run minor
// to major. Slices and reduce-scatters, which shrink the value, come before
// all-reduces, and those before all-gathers.
// Collective nodes are made by one factory, makeCollective().
//===----------------------------------------------------------------------===//
#pragma once
#include "passes/sharding/Layout.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/Error.h"

namespace partita {

enum class CollectiveKind { AllReduce, AllGather, ReduceScatter, ShardSlice };

struct ReshardStep {
  CollectiveKind kind;
  int64_t dim = -1;  // gathered / scattered / sliced dimension
  int64_t outer = 1; // its outer factor (Layout::outer)
  bool max = false;  // AllReduce: reduce by max instead of sum
  std::string axis;  // the mesh axis whose group communicates (sharding planner)
  /// The value's sharding after this step (sharding planner).
  Sharding result;
};

/// Steps converting `from` to `to` (shardings of a value of rank `rank`) on
/// any axes of the mesh; each step names its axis and the sharding it leaves.
llvm::Expected<std::vector<ReshardStep>> planReshard(const Sharding &from, const Sharding &to, size_t rank);

/// The same along one axis (the steps' axis and result are left empty).
llvm::Expected<std::vector<ReshardStep>> planReshard(const Layout &from, const Layout &to);

/// Creates the node for one step on `input` (global types; the result takes
/// layout `result` along `axis`, other axes as `input` has them).
Value *makeCollective(Graph &g, const ReshardStep &step, Value *input, llvm::StringRef axis,
                      const Layout &result, llvm::StringRef nameHint);
/// Creates the node for a sharding planner step (its axis, its result sharding).
Value *makeCollective(Graph &g, const ReshardStep &step, Value *input, llvm::StringRef nameHint);

/// `in` converted to sharding `to` by the planned steps (insert-collectives'
/// lowering of a partita.Reshard): the last step's result is named `name`,
/// the others `<in>.gathered`; `made` sees each node. `in` itself when the
/// shardings agree.
llvm::Expected<Value *> lowerReshard(Graph &g, Value *in, const Sharding &to, llvm::StringRef name,
                                     llvm::function_ref<void(Node *)> made = {});

const char *collectiveOpName(CollectiveKind k);

} // namespace partita
