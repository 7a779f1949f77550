//===- InferenceSchedule.h - one forward per step -------------------------===//
//
// Inference: a step is the forward program on the given inputs. InferenceRun
// is its runner: it keeps the forward's outputs for the caller.
//===----------------------------------------------------------------------===//
#pragma once
#include "runtime/executor/Program.h"
#include "runtime/schedule/Schedule.h"

namespace partita::rt {

class InferenceSchedule final : public Schedule {
public:
  std::vector<Action> step() const override;
};

/// Runs the Forward action of an inference step: `program` on `inputs`.
class InferenceRun final : public ActionRunner {
public:
  InferenceRun(Program &program, const llvm::StringMap<TensorView> &inputs) : program_(program), inputs_(inputs) {}
  llvm::Error run(const Action &action) override;
  /// The last forward's outputs (views of the program's buffers, valid until its next run).
  const std::vector<TensorView> &outputs() const { return outputs_; }

private:
  Program &program_;
  const llvm::StringMap<TensorView> &inputs_;
  std::vector<TensorView> outputs_;
};

} // namespace partita::rt
