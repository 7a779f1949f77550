//===- AccumulationSchedule.h - gradient accumulation over micro-batches ---===//
//
// A training step of M micro-batches on one pipeline stage: forward, then
// backward, of micro-batch 0..M-1 (their gradients summed; the last one's may start
// their reduction while its backward runs), then the gradient reduction, then
// the optimizer step.
//===----------------------------------------------------------------------===//
#pragma once
#include "runtime/schedule/Schedule.h"

namespace partita::rt {

class AccumulationSchedule final : public Schedule {
public:
  /// `microBatches` < 1 counts as 1.
  explicit AccumulationSchedule(int64_t microBatches) : microBatches_(microBatches < 1 ? 1 : microBatches) {}
  int64_t microBatches() const { return microBatches_; }
  std::vector<Action> step() const override;

private:
  int64_t microBatches_;
};

} // namespace partita::rt
