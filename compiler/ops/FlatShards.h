//===- FlatShards.h - a tensor's shards as flat, padded buffers -----------===//
//
// ZeRO keeps optimizer state, gradients and parameters in flat buffers, each
// rank owning a contiguous part (DeepSpeed's flat partitions). A parameter
// that tensor parallelism splits on dimension `dim` into `blocks` blocks
// (inside `outer` blocks of that dimension, as Sharding::outer) has one flat
// buffer per block: block k, flattened row-major and zero-padded to `length`
// elements, is elements [k·length, (k+1)·length) of
//   partita.FlattenShards(x) {dim, blocks, outer, length} : [blocks·length]
// and partita.UnflattenShards(y) {dim, blocks, outer, shape} is its inverse
// (the padding dropped). With blocks = 1 they are a flatten and pad and its
// inverse: what one rank runs on its own shard. The padding makes every
// block's length divisible by the data-parallel size, so the data-parallel
// axis splits each block evenly.
//
// Block k of x, viewed as [pre, n, post] around `dim` with
// n = outer·blocks·r, is rows {o·blocks·r + k·r + j : o < outer, j < r} of
// each of the pre slabs: the contiguous runs forEachShardRun() lists.
//===----------------------------------------------------------------------===//
#pragma once
#include "compiler/ir/Tensor.h"
#include <cstdint>

namespace partita {

struct FlatShardsLayout {
  int64_t dim = 0, blocks = 1, outer = 1, length = 0;
};

/// Calls fn(block, xOffset, flatOffset, count) for every run of `count`
/// consecutive elements of x (offset xOffset, row-major over `shape`) that
/// are elements flatOffset.. of the flat buffer. A rank-0 x is one element.
template <typename Fn> void forEachShardRun(const Shape &shape, const FlatShardsLayout &l, Fn &&fn) {
  int64_t pre = 1, n = 1, post = 1;
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d)
    (d < l.dim ? pre : d == l.dim ? n : post) *= shape[static_cast<size_t>(d)];
  int64_t r = n / (l.outer * l.blocks), run = r * post;
  for (int64_t k = 0; k < l.blocks; ++k)
    for (int64_t p = 0; p < pre; ++p)
      for (int64_t o = 0; o < l.outer; ++o)
        fn(k, (p * n + (o * l.blocks + k) * r) * post, k * l.length + (p * l.outer + o) * run, run);
}

} // namespace partita
