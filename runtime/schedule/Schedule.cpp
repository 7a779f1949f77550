//===- Schedule.cpp -------------------------------------------------------===//
#include "runtime/schedule/Schedule.h"

namespace partita::rt {

const char *actionName(Action::Kind kind) {
  switch (kind) {
  case Action::Kind::Forward:
    return "forward";
  case Action::Kind::Backward:
    return "backward";
  case Action::Kind::ReduceGradients:
    return "reduce gradients";
  case Action::Kind::OptimizerStep:
    return "optimizer step";
  }
  return "?";
}

llvm::Error runStep(const Schedule &schedule, ActionRunner &runner) {
  for (const Action &action : schedule.step())
    if (auto err = runner.run(action))
      return err;
  return llvm::Error::success();
}

} // namespace partita::rt
