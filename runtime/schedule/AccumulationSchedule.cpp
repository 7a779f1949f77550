//===- AccumulationSchedule.cpp -------------------------------------------===//
#include "runtime/schedule/AccumulationSchedule.h"

namespace partita::rt {

std::vector<Action> AccumulationSchedule::step() const {
  std::vector<Action> actions;
  for (int64_t m = 0; m < microBatches_; ++m) {
    actions.push_back({Action::Kind::Forward, m});
    actions.push_back({Action::Kind::Backward, m, /*lastGradients=*/m + 1 == microBatches_});
  }
  actions.push_back({Action::Kind::ReduceGradients});
  actions.push_back({Action::Kind::OptimizerStep});
  return actions;
}

} // namespace partita::rt
