//===- Schedule.h - the order in which a rank runs its programs -----------===//
//
// A schedule says what one rank does in one step, as a list of actions: the
// forward of a micro-batch, its backward, the
// reduction of the step's gradients, the optimizer step. It only orders; an
// ActionRunner (the training loop, an inference run) carries each action out
// on the session's programs. Every forward and backward names its
// micro-batch, so a pipeline schedule (GPipe, 1F1B) can interleave the
// forwards and backwards of different micro-batches, and a test can check an
// order without running anything (DeepSpeed's PipeSchedule is the model).
//===----------------------------------------------------------------------===//
#pragma once
#include "llvm/Support/Error.h"
#include <cstdint>
#include <vector>

namespace partita::rt {

struct Action {
  enum class Kind {
    Forward,         // the forward program of a micro-batch
    Backward,        // the backward of a micro-batch whose forward ran before
    ReduceGradients, // complete the step's gradient sums (over data-parallel replicas)
    OptimizerStep,   // update the parameters from the reduced gradients
  };
  Kind kind;
  int64_t microBatch = -1; // Forward, Backward: which one
  /// Backward: the step's last gradient contribution (the
  /// gradient reduction may start as each gradient is complete).
  bool lastGradients = false;
  /// Forward, Backward: which of the rank's model chunks (interleaving).
  int64_t chunk = 0;

  bool operator==(const Action &o) const {
    return kind == o.kind && microBatch == o.microBatch && lastGradients == o.lastGradients && chunk == o.chunk;
  }
};

/// "forward", "backward", "reduce gradients", "optimizer step".
const char *actionName(Action::Kind kind);

class Schedule {
public:
  virtual ~Schedule() = default;
  /// The actions of one step, in the order the rank runs them.
  virtual std::vector<Action> step() const = 0;
};

/// Carries out actions on a rank's programs.
class ActionRunner {
public:
  virtual ~ActionRunner() = default;
  virtual llvm::Error run(const Action &action) = 0;
};

/// Runs one step of `schedule` on `runner`, stopping at the first error.
llvm::Error runStep(const Schedule &schedule, ActionRunner &runner);

} // namespace partita::rt
