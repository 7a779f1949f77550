//===- GradientAccumulator.h - gradient sums over a step's micro-batches ---===//
//
// The forward program computes the loss and every gradient; under data
// parallelism it also all-reduces them over dp itself, in async buckets that
// compile placed where their last gradient is computed (coalesce-collectives).
// Over M micro-batches this sums each gradient, with every reduction run
// once: the program defers its reductions in micro-batches 1..M-1 (DDP's
// no_sync: their results are this rank's partial sums, kept here) and the
// last micro-batch's reductions add those sums in before they reduce
// (Program::setReductionAddend). Reductions are linear, so the sums are
// those of reducing every micro-batch. Gradients the program does not
// reduce asynchronously (no dp) are summed here as they come.
//===----------------------------------------------------------------------===//
#pragma once
#include "runtime/executor/Program.h"
#include <memory>
#include <string>
#include <vector>

namespace partita::rt {

class GradientAccumulator {
public:
  /// `gradOutputs[i]` names the program output of parameter i's gradient
  /// (f32, `numel[i]` elements); output 0 is the loss. The program's
  /// deferred reductions get their addends (the sums kept here) once.
  static llvm::Expected<std::unique_ptr<GradientAccumulator>> create(Program &program,
                                                                     std::vector<std::string> gradOutputs,
                                                                     std::vector<int64_t> numel, int64_t microBatches);

  /// Sets the program up for micro-batch `micro` (0-based) of a step: the
  /// last one reduces, the others defer.
  void beforeRun(int64_t micro);
  /// Takes micro-batch `micro`'s outputs (valid until the program's next run).
  void afterRun(int64_t micro, const std::vector<TensorView> &outputs);

  /// Parameter i's gradient summed over the step's micro-batches (after the
  /// last afterRun; the program's output buffer or a sum kept here).
  float *gradient(size_t i) const { return grads_[i]; }
  /// The loss summed over the step's micro-batches.
  double lossSum() const { return lossSum_; }

private:
  GradientAccumulator(Program &program, std::vector<std::string> gradOutputs, std::vector<int64_t> numel,
                      int64_t microBatches);

  Program &program_;
  std::vector<std::string> names_;
  std::vector<int64_t> numel_;
  int64_t micro_;
  std::vector<size_t> outputIndex_;
  std::vector<bool> deferred_; // reduced by the program, deferred until the last micro-batch
  bool lossDeferred_ = false;
  std::vector<std::vector<float>> sums_; // per parameter, with several micro-batches
  std::vector<float *> grads_;
  float lossPartial_ = 0;
  double lossSum_ = 0;
};

} // namespace partita::rt
