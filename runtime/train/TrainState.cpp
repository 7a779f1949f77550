//===- TrainState.cpp -----------------------------------------------------===//
#include "runtime/train/TrainState.h"
#include "runtime/checkpoint/StatePlacement.h"

namespace partita::rt {

const char *stateKindName(StateKind kind) {
  switch (kind) {
  case StateKind::Weight:
    return "weight";
  case StateKind::Moment1:
    return "adam_m";
  case StateKind::Moment2:
    return "adam_v";
  case StateKind::HalfWeight:
    return "half_weight";
  }
  return "?";
}

/// The parameter's piece in its initializer: parameter p is the box at
/// target.start of transpose(initializer, perm), so its pieces are boxes of
/// that tensor, named after the initializer (and the transpose). A fused
/// projection split into q, k and v parameters under one layout and whole
/// under another then meets in the same tensor. Not for a parameter whose
/// shards repeat kv heads, nor a box inside an outer-split view: those stay
/// in the parameter's own terms (resumable under the same layout only).
static bool inInitializer(const ParamTarget &t, std::string &name, Shape &whole, StateBox &box) {
  if (!t.repeat.empty() || t.stored.empty() || t.shape != whole ||
      (!t.perm.empty() && t.perm.size() != t.stored.size()) || (!t.start.empty() && t.start.size() != whole.size()))
    return false;
  Shape logical = t.stored;
  for (size_t d = 0; d < t.perm.size(); ++d)
    logical[d] = t.stored[static_cast<size_t>(t.perm[d])];
  if (logical.size() != whole.size())
    return false;
  for (size_t d = 0; d < whole.size(); ++d)
    if ((t.start.empty() ? 0 : t.start[d]) + whole[d] > logical[d])
      return false;
  bool outer = false;
  for (int64_t o : box.outer)
    outer |= o > 1;
  if (outer && logical != whole)
    return false;
  if (!t.start.empty())
    for (size_t d = 0; d < whole.size(); ++d)
      box.start[d] += t.start[d]; // no outer factors: one view dimension per dimension
  name = t.initializer;
  if (!t.perm.empty()) {
    name += " transposed(";
    for (size_t d = 0; d < t.perm.size(); ++d)
      name += (d ? "," : "") + std::to_string(t.perm[d]);
    name += ")";
  }
  whole = logical;
  return true;
}

llvm::Error TrainState::add(size_t param, StateKind kind, const TensorView &view) {
  auto placed = placeState(*plan_, param, coords_, view.numel());
  if (!placed)
    return placed.takeError();
  std::string name = plan_->params[param];
  bool copy = false; // a stage's copy of a weight an earlier stage holds: the same values, saved once
  for (const Plan::Edge &e : plan_->pipelineWeights)
    if (sharedWeightCopy(e.value, e.to) == name)
      copy = true;
  Shape whole = placed->whole;
  StateBox box = placed->box;
  if (param >= plan_->paramTargets.size() || plan_->paramTargets[param].empty() ||
      !inInitializer(plan_->paramTargets[param].front(), name, whole, box)) {
    whole = placed->whole;
    box = placed->box;
    for (const Plan::Edge &e : plan_->pipelineWeights)
      if (sharedWeightCopy(e.value, e.to) == name)
        name = e.value;
  }
  tensors_.push_back({std::move(name), kind, view, std::move(whole), std::move(box),
                      placed->writer && !copy && kind != StateKind::HalfWeight});
  return llvm::Error::success();
}

} // namespace partita::rt
