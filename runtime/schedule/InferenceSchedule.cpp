//===- InferenceSchedule.cpp ----------------------------------------------===//
#include "runtime/schedule/InferenceSchedule.h"

namespace partita::rt {

std::vector<Action> InferenceSchedule::step() const { return {Action{Action::Kind::Forward, 0}}; }

llvm::Error InferenceRun::run(const Action &action) {
  if (action.kind != Action::Kind::Forward)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   llvm::Twine("an inference run has no ") + actionName(action.kind) + " action");
  auto outs = program_.run(inputs_);
  if (!outs)
    return outs.takeError();
  outputs_ = std::move(*outs);
  return llvm::Error::success();
}

} // namespace partita::rt
