//===- Layout.h - a value's layout along one mesh axis ---------------------===//
//
// The sharding passes reason about one mesh axis at a time (tensor parallelism
// shards over `tp`). Along that axis a value is replicated, split on one
// dimension, or a partial sum (or max). Layout is that projection of a Sharding; it
// converts back to the IR's Sharding for the axis.
//
//===----------------------------------------------------------------------===//
#pragma once
#include "compiler/ir/Graph.h"
#include <optional>
#include <string>

namespace partita {

struct Layout {
  int64_t dim = -1;     // split dimension, -1 when not split
  bool partial = false; // a partial sum over the axis
  int64_t outer = 1;    // the split applies inside `outer` blocks of dim (see Sharding::outer)
  bool max = false;     // with partial: per-rank maxima, reduced by max

  static Layout replicated() { return {}; }
  static Layout split(int64_t d, int64_t outer = 1) { return {d, false, outer}; }
  static Layout partialSum() { return {-1, true}; }
  static Layout partialMax() { return {-1, true, 1, true}; }
  /// A partial that sums: linear ops may carry it through.
  bool isPartialSum() const { return partial && !max; }
  bool isReplicated() const { return dim < 0 && !partial; }
  bool operator==(const Layout &o) const {
    return dim == o.dim && partial == o.partial && (!partial || max == o.max) && (dim < 0 || outer == o.outer);
  }
  bool operator!=(const Layout &o) const { return !(*this == o); }
  std::string str() const;
};

/// The layout of `v` along `axis` (replicated when it has no sharding). A
/// dimension's outer factor belongs to its minor-most axis: the major ones
/// split it in contiguous blocks.
Layout layoutOf(const Value *v, llvm::StringRef axis);
/// Sets `v`'s sharding along `axis` to `l`, keeping other axes. On a
/// dimension other axes already split, `axis` becomes the minor-most one, or
/// with `major` the major-most (data parallelism's batch: the other axes
/// then split inside each of its blocks, and keep their outer factor).
void setLayout(Value *v, llvm::StringRef axis, const Layout &l, bool major = false);
/// Sharding of a rank-`rank` value with layout `l` along `axis` only.
Sharding toSharding(const Layout &l, llvm::StringRef axis, size_t rank);

} // namespace partita
