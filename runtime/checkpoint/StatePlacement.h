//===- StatePlacement.h - which piece of a parameter a rank's state holds --===//
//
// From the plan alone: parameter i's shard on a rank is the block its
// coordinate selects on every mesh axis that splits the parameter
// (plan.paramLayouts, "S(d)" or "S(d,outer=k)"), of the whole shape the
// shards make together; a buffer with fewer elements than the shard is the
// rank's ZeRO part of the shard's flat buffer (ceil(n / dp) elements at
// dp coordinate x dp part, the padding left out). Of the ranks holding the
// same piece (replicas along axes that do not split it) one writes it to a
// checkpoint: parameter i's, the one at coordinate i mod the size of each
// such axis, so the replicas share the bytes to write.
//===----------------------------------------------------------------------===//
#pragma once
#include "compiler/plan/Plan.h"
#include "runtime/checkpoint/StateBox.h"
#include <map>

namespace partita::rt {

struct StatePlacement {
  Shape whole;    // the whole parameter's shape
  StateBox box;   // what the rank holds of it
  bool writer;    // this rank saves the piece
};

/// Where `heldNumel` elements of parameter plan.params[param] on the rank at
/// `coords` (mesh axis -> coordinate) lie in the whole parameter.
llvm::Expected<StatePlacement> placeState(const Plan &plan, size_t param, const std::map<std::string, int64_t> &coords,
                                          int64_t heldNumel);

/// Moves a piece of a parameter (`name`, `whole`, `box` on entry) into the
/// terms of the initializer its `target` names; false (nothing changed) where
/// it cannot. The parameter is the box at target.start of
/// transpose(initializer, perm), so its pieces are boxes of that tensor,
/// named after the initializer (and the transpose): a fused projection split
/// into q, k and v parameters under one layout and whole under another then
/// meets in the same tensor. Not for a parameter whose shards repeat kv
/// heads, nor a box inside an outer-split view: those stay in the
/// parameter's own terms (resumable under the same layout only).
bool placeInInitializer(const ParamTarget &target, std::string &name, Shape &whole, StateBox &box);

} // namespace partita::rt
