//===- StateBox.h - where a rank's piece of a tensor lies in the whole ----===//
//
// Every piece of training state a rank holds is part of one whole tensor
// (a parameter, its fp32 master, a moment): its tensor-parallel shard, or
// under ZeRO a contiguous run of that shard's elements in row-major order
// (the rank's part of the shard's flat buffer, padding left out).
//
// A shard is a box of the whole tensor seen with each split dimension of an
// `outer` factor > 1 as [outer, n / outer] (a fused q/k/v projection split by
// heads: the rank holds a block of each of q, k and v), the split applying to
// the inner part. Checkpoints record each saved piece's StateBox; a resume
// under any layout fills each piece it needs from the saved pieces that
// overlap it (copyOverlap), whatever the two layouts are.
//===----------------------------------------------------------------------===//
#pragma once
#include "compiler/ir/Tensor.h"
#include <cstddef>
#include <cstdint>
#include <vector>

namespace partita::rt {

struct StateBox {
  /// Per dimension of the whole tensor, its outer factor (empty: all 1).
  Shape outer;
  /// A box of the whole tensor's view (each dimension with an outer factor
  /// > 1 as two: [outer, n / outer]); a rank-0 tensor: empty, one element.
  Shape start, extent;
  /// The box's elements [flatBegin, flatEnd) in row-major order.
  int64_t flatBegin = 0, flatEnd = 0;

  /// All of box (start, extent) of a view with `outer` factors.
  static StateBox whole(Shape outer, Shape start, Shape extent);
  int64_t boxNumel() const { return numElements(extent); }
  int64_t numel() const { return flatEnd - flatBegin; }
  bool operator==(const StateBox &o) const {
    return outer == o.outer && start == o.start && extent == o.extent && flatBegin == o.flatBegin &&
           flatEnd == o.flatEnd;
  }
};

/// Copies the elements that piece `from` (its values in `src`, numel()
/// elements of `elemSize` bytes) and piece `to` (in `dst`) both hold, from
/// src to dst; returns how many. Both are pieces of one tensor of shape `whole`.
/// With elemSize 0 it only counts them (src and dst may be null).
int64_t copyOverlap(const void *src, const StateBox &from, void *dst, const StateBox &to, const Shape &whole,
                    size_t elemSize);

/// Whether `pieces` hold every element of a tensor of shape `whole` exactly
/// once (none twice, none missing).
bool piecesTile(const std::vector<StateBox> &pieces, const Shape &whole);

} // namespace partita::rt
