//===- StepSimulation.h - one training step's time on a pipeline ----------===//
//
// Runs the runtime's own schedules (runtime/schedule: GPipe, 1F1B,
// interleaved 1F1B) on predicted times: every rank of one pipeline takes its
// actions in its schedule's order, each as soon as the rank is free and its
// input has arrived (a forward waits for the previous stage's forward of
// that micro-batch and the send after it; a backward for the next stage's
// backward, the last stage's for its own forward). Sends do not hold the
// sender (the runtime's are asynchronous). The step ends when the slowest
// rank has run its tail: the rest of the gradient reduction, grad_norm and
// the step. Data-parallel replicas run the same pipeline at once.
//===----------------------------------------------------------------------===//
#pragma once
#include "runtime/schedule/PipelineSchedule.h"
#include <vector>

namespace partita::planner {

/// One model chunk's times on one rank, per micro-batch (seconds).
struct ChunkTimes {
  double forward = 0, backward = 0;
  double sendForward = 0, sendBackward = 0; // the activation to the next stage, its gradient to the one before
  double afterSend = 0;         // of `backward`, what comes after its input gradient left (its kernels after the send, sums, reductions)
  double lastBackwardExtra = 0; // the last micro-batch's backward: what the gradient reduction adds (after the send)
};

struct StageTimes {
  std::vector<ChunkTimes> chunks; // per model chunk (virtual stage) the rank holds
  double tail = 0;                // after the last backward: reductions left, grad_norm, step
};

struct SimulatedStep {
  double seconds = 0;
  double busiest = 0; // the busiest rank's work (forward, backward, tail)
  double bubble() const { return seconds > 0 ? 1 - busiest / seconds : 0; }
};

/// `stages[s]`: pipeline rank s (p = stages.size()); `interleaved` when the
/// ranks hold several chunks (then `kind` is 1F1B's).
SimulatedStep simulateStep(const std::vector<StageTimes> &stages, rt::PipelineKind kind, int64_t microBatches);

} // namespace partita::planner
