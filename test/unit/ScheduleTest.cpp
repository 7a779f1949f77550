#include "runtime/schedule/AccumulationSchedule.h"
#include "runtime/schedule/InferenceSchedule.h"
#include "runtime/schedule/PipelineSchedule.h"
#include <map>
#include <tuple>
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

// Pipeline schedules (PipelineSchedule.h), checked by running every stage's
// list against the dependencies a pipeline has: a micro-batch's forward on
// stage c needs its forward on c - 1, its backward on c needs its forward on
// c and its backward on c + 1. Each rank runs its list in order, one action
// at a time, a forward taking 1 unit and a backward 2 (split over V chunks:
// 1/V and 2/V). The lists must never deadlock, and the step's span must be
// the textbook one: (m + p - 1) x 3 for GPipe and 1F1B, m x 3 + (p - 1) x 3 / V
// interleaved (Narayanan et al., 2021), i.e. the bubbles (p-1)/(m+p-1) and
// (p-1)/(V·m+p-1).
namespace {
struct Simulated {
  bool deadlock = false;
  double span = 0;
  std::vector<int64_t> maxInFlight; // per rank: forwards begun whose backward has not
};

Simulated simulate(const std::vector<std::vector<Action>> &perRank, int64_t chunks, int64_t micro) {
  const int64_t p = static_cast<int64_t>(perRank.size()), stages = p * chunks;
  const double f = 1.0 / static_cast<double>(chunks), b = 2.0 / static_cast<double>(chunks);
  std::map<std::tuple<bool, int64_t, int64_t>, double> done; // (backward, stage, micro) -> finish
  std::vector<size_t> next(p, 0);
  std::vector<double> freeAt(p, 0);
  Simulated out;
  out.maxInFlight.assign(p, 0);
  std::vector<int64_t> live(p, 0);
  for (bool progress = true; progress;) {
    progress = false;
    for (int64_t r = 0; r < p; ++r) {
      while (next[r] < perRank[r].size()) {
        const Action &a = perRank[r][next[r]];
        if (a.kind != Kind::Forward && a.kind != Kind::Backward) {
          ++next[r];
          continue;
        }
        bool backward = a.kind == Kind::Backward;
        int64_t c = r + a.chunk * p, m = a.microBatch;
        std::vector<std::tuple<bool, int64_t, int64_t>> deps;
        if (!backward && c > 0)
          deps.push_back({false, c - 1, m});
        if (backward) {
          deps.push_back({false, c, m});
          if (c + 1 < stages)
            deps.push_back({true, c + 1, m});
        }
        double start = freeAt[r];
        bool ready = true;
        for (const auto &d : deps) {
          auto it = done.find(d);
          if (it == done.end()) {
            ready = false;
            break;
          }
          start = std::max(start, it->second);
        }
        if (!ready)
          break;
        freeAt[r] = start + (backward ? b : f);
        done[{backward, c, m}] = freeAt[r];
        live[r] += backward ? -1 : 1;
        out.maxInFlight[r] = std::max(out.maxInFlight[r], live[r]);
        ++next[r];
        progress = true;
      }
    }
  }
  for (int64_t r = 0; r < p; ++r)
    out.deadlock |= next[r] != perRank[r].size();
  for (double t : freeAt)
    out.span = std::max(out.span, t);
  (void)micro;
  return out;
}
} // namespace

TEST(Schedule, OneFOneBWarmsUpThenAlternates) {
  using A = Action;
  std::vector<Action> first = {A{Kind::Forward, 0}, A{Kind::Forward, 1}, A{Kind::Backward, 0, false},
                               A{Kind::Forward, 2}, A{Kind::Backward, 1, false}, A{Kind::Backward, 2, true},
                               A{Kind::ReduceGradients}, A{Kind::OptimizerStep}};
  EXPECT_EQ(PipelineSchedule(PipelineKind::OneFOneB, 2, 0, 3).step(), first);
  std::vector<Action> gpipe = {A{Kind::Forward, 0}, A{Kind::Forward, 1}, A{Kind::Backward, 0, false},
                               A{Kind::Backward, 1, true}, A{Kind::ReduceGradients}, A{Kind::OptimizerStep}};
  EXPECT_EQ(PipelineSchedule(PipelineKind::GPipe, 4, 3, 2).step(), gpipe);
}

TEST(Schedule, PipelinesRunToTheTextbookSpan) {
  for (PipelineKind kind : {PipelineKind::GPipe, PipelineKind::OneFOneB})
    for (int64_t p : {2, 3, 4})
      for (int64_t m : {1, 2, 4, 8}) {
        std::vector<std::vector<Action>> lists;
        for (int64_t s = 0; s < p; ++s)
          lists.push_back(PipelineSchedule(kind, p, s, m).step());
        Simulated sim = simulate(lists, 1, m);
        ASSERT_FALSE(sim.deadlock) << "p " << p << " m " << m;
        EXPECT_DOUBLE_EQ(sim.span, 3.0 * static_cast<double>(m + p - 1)) << "p " << p << " m " << m;
        for (int64_t s = 0; s < p; ++s) // 1F1B stashes at most p - s micro-batches, GPipe all m
          EXPECT_EQ(sim.maxInFlight[s], kind == PipelineKind::GPipe ? m : std::min(p - s, m));
      }
}

TEST(Schedule, InterleavedRunsToItsSmallerBubble) {
  for (int64_t p : {2, 4})
    for (int64_t v : {2, 3})
      for (int64_t m : {p, 2 * p, 4 * p}) {
        std::vector<std::vector<Action>> lists;
        for (int64_t s = 0; s < p; ++s)
          lists.push_back(InterleavedSchedule(p, s, v, m).step());
        Simulated sim = simulate(lists, v, m);
        ASSERT_FALSE(sim.deadlock) << "p " << p << " v " << v << " m " << m;
        double want = 3.0 * static_cast<double>(m) + 3.0 * static_cast<double>(p - 1) / static_cast<double>(v);
        EXPECT_NEAR(sim.span, want, 1e-9) << "p " << p << " v " << v << " m " << m;
      }
}
