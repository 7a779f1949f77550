//===- StepSimulation.cpp -------------------------------------------------===//
#include "planner/StepSimulation.h"
#include <algorithm>
#include <limits>
#include <map>

namespace partita::planner {

SimulatedStep simulateStep(const std::vector<StageTimes> &stages, rt::PipelineKind kind, int64_t microBatches) {
  const int64_t p = static_cast<int64_t>(stages.size());
  const int64_t chunks = stages.empty() ? 1 : static_cast<int64_t>(stages.front().chunks.size());
  const int64_t m = std::max<int64_t>(1, microBatches);
  const int64_t last = p * chunks - 1; // the last global stage
  std::vector<std::vector<rt::Action>> actions(p);
  for (int64_t s = 0; s < p; ++s)
    actions[s] = chunks > 1 ? rt::InterleavedSchedule(p, s, chunks, m).step() : rt::PipelineSchedule(kind, p, s, m).step();
  // When each global stage's forward and backward of each micro-batch
  // finished (and its output arrived downstream).
  constexpr double kNever = std::numeric_limits<double>::infinity();
  std::vector<std::vector<double>> forwardArrives(last + 1, std::vector<double>(m, kNever));
  std::vector<std::vector<double>> forwardDone(last + 1, std::vector<double>(m, kNever));
  std::vector<std::vector<double>> backwardArrives(last + 1, std::vector<double>(m, kNever));
  std::vector<size_t> next(p, 0);
  std::vector<double> clock(p, 0), busy(p, 0);
  for (bool progressed = true; progressed;) {
    progressed = false;
    for (int64_t s = 0; s < p; ++s) {
      while (next[s] < actions[s].size()) {
        const rt::Action &a = actions[s][next[s]];
        if (a.kind != rt::Action::Kind::Forward && a.kind != rt::Action::Kind::Backward) {
          ++next[s];
          continue;
        }
        const int64_t stage = s + a.chunk * p, j = a.microBatch;
        const ChunkTimes &t = stages[s].chunks[a.chunk];
        double ready = 0;
        if (a.kind == rt::Action::Kind::Forward)
          ready = stage == 0 ? 0 : forwardArrives[stage - 1][j];
        else
          ready = stage == last ? forwardDone[stage][j] : backwardArrives[stage + 1][j];
        if (ready == kNever)
          break; // waits for another rank
        double work = a.kind == rt::Action::Kind::Forward ? t.forward : t.backward;
        if (a.kind == rt::Action::Kind::Backward && a.lastGradients)
          work += t.lastBackwardExtra;
        const double start = std::max(clock[s], ready), end = start + work;
        clock[s] = end;
        busy[s] += work;
        if (a.kind == rt::Action::Kind::Forward) {
          forwardDone[stage][j] = end;
          forwardArrives[stage][j] = end + t.sendForward;
        } else { // the input's gradient leaves before the sums and the reduction's tail
          backwardArrives[stage][j] = start + t.backward - t.afterSend + t.sendBackward;
        }
        ++next[s];
        progressed = true;
      }
    }
  }
  SimulatedStep out;
  for (int64_t s = 0; s < p; ++s) {
    out.seconds = std::max(out.seconds, clock[s] + stages[s].tail);
    out.busiest = std::max(out.busiest, busy[s] + stages[s].tail);
  }
  return out;
}

} // namespace partita::planner
