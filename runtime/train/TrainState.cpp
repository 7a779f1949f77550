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

llvm::Error TrainState::add(size_t param, StateKind kind, const TensorView &view, Device *on) {
  auto placed = placeState(*plan_, param, coords_, view.numel());
  if (!placed)
    return placed.takeError();
  std::string name = plan_->params[param];
  // A stage's copy of a weight an earlier stage holds: the same values, saved once.
  const Plan::Edge *copyOf = nullptr;
  for (const Plan::Edge &e : plan_->pipelineWeights)
    if (sharedWeightCopy(e.value, e.to) == name)
      copyOf = &e;
  Shape whole = placed->whole;
  StateBox box = placed->box;
  if ((param >= plan_->paramTargets.size() || plan_->paramTargets[param].empty() ||
       !placeInInitializer(plan_->paramTargets[param].front(), name, whole, box)) &&
      copyOf) // in the parameter's own terms: the copy reads the weight it copies
    name = copyOf->value;
  tensors_.push_back({std::move(name), kind, view, on ? on : device_, std::move(whole), std::move(box),
                      placed->writer && !copyOf && kind != StateKind::HalfWeight});
  return llvm::Error::success();
}

llvm::Expected<TensorView> TrainState::allocate(size_t param, StateKind kind, const TensorType &type, Device *on) {
  Device &device = on ? *on : *device_;
  auto made = DeviceTensor::zeros(device, type.dtype, type.shape, MemoryCategory::OptimizerStates,
                                  std::string(stateKindName(kind)) + " of " + plan_->params[param]);
  if (!made)
    return made.takeError();
  TensorView view = made->view();
  owned_.push_back(std::move(*made));
  if (auto err = add(param, kind, view, &device))
    return std::move(err);
  return view;
}

llvm::Expected<TensorView> TrainState::adopt(size_t param, StateKind kind, Program &program, llvm::StringRef weight,
                                             MemoryCategory category) {
  auto view = program.releaseWeight(weight);
  if (!view)
    return view.takeError();
  owned_.push_back(DeviceTensor::adopt(program.device(), *view, category));
  if (auto err = add(param, kind, *view, &program.device()))
    return std::move(err);
  return *view;
}

} // namespace partita::rt
