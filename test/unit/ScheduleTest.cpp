#include "runtime/schedule/AccumulationSchedule.h"
#include "runtime/schedule/InferenceSchedule.h"
#include <gtest/gtest.h>
#include <optional>

using namespace partita::rt;
using Kind = Action::Kind;

TEST(Schedule, InferenceIsOneForward) {
  EXPECT_EQ(InferenceSchedule().step(), (std::vector<Action>{{Kind::Forward, 0}}));
}

TEST(Schedule, AccumulationRunsEveryMicroBatchThenReducesThenSteps) {
  std::vector<Action> expected = {{Kind::Forward, 0},           {Kind::Backward, 0, false},
                                  {Kind::Forward, 1},           {Kind::Backward, 1, false},
                                  {Kind::Forward, 2},           {Kind::Backward, 2, true},
                                  {Kind::ReduceGradients},
                                  {Kind::OptimizerStep}};
  EXPECT_EQ(AccumulationSchedule(3).step(), expected);
}

TEST(Schedule, AccumulationOfOneMicroBatchIsItsLast) {
  for (int64_t m : {1, 0, -2}) {
    std::vector<Action> actions = AccumulationSchedule(m).step();
    ASSERT_EQ(actions.size(), 4u);
    EXPECT_EQ(actions[0], (Action{Kind::Forward, 0}));
    EXPECT_EQ(actions[1], (Action{Kind::Backward, 0, true}));
  }
}

namespace {
struct Recorder final : ActionRunner {
  std::vector<Action> seen;
  std::optional<Kind> failOn; // none: every action succeeds
  llvm::Error run(const Action &a) override {
    seen.push_back(a);
    if (a.kind == failOn)
      return llvm::createStringError(llvm::inconvertibleErrorCode(), actionName(a.kind));
    return llvm::Error::success();
  }
};
} // namespace

TEST(Schedule, RunStepRunsTheActionsInOrder) {
  Recorder r;
  ASSERT_FALSE(llvm::errorToBool(runStep(AccumulationSchedule(2), r)));
  EXPECT_EQ(r.seen, AccumulationSchedule(2).step());
}

TEST(Schedule, RunStepStopsAtTheFirstError) {
  Recorder r;
  r.failOn = Kind::ReduceGradients;
  llvm::Error err = runStep(AccumulationSchedule(2), r);
  EXPECT_EQ(llvm::toString(std::move(err)), "reduce gradients");
  EXPECT_EQ(r.seen.size(), 5u); // two forwards and backwards, then the failing reduction; no optimizer step
}
