//===- AdamWState.h - the optimizer step program and its moments ----------===//
//
// The step program (passes/AdamWStep.h) updates every parameter and its two
// moments in place: its outputs p.i.new / m.i.new / v.i.new are bound to the
// forward program's weights and to the moment buffers held here. Each step
// feeds it the learning rate and the bias corrections 1 - beta^t from the
// plan's optimizer options.
//===----------------------------------------------------------------------===//
#pragma once
#include "compiler/ir/Tensor.h"
#include "passes/AdamWStep.h"
#include "runtime/executor/Program.h"
#include <vector>

namespace partita::rt {

class AdamWState {
public:
  /// Binds `step`'s outputs to `params` (device buffers of the forward
  /// program's weights) and to zeroed moments.
  static llvm::Expected<AdamWState> create(Program &step, llvm::ArrayRef<const TensorView *> params,
                                           const AdamWOptions &options);
  /// Optimizer step `t` (1-based) at learning rate `lr` with parameter i's
  /// gradient at grads[i] (f32, shaped like it).
  llvm::Error apply(int64_t t, float lr, llvm::ArrayRef<float *> grads);

private:
  AdamWState(Program &step, llvm::ArrayRef<const TensorView *> params, const AdamWOptions &options)
      : step_(&step), params_(params.begin(), params.end()), options_(options) {}
  Program *step_;
  std::vector<const TensorView *> params_;
  AdamWOptions options_;
  std::vector<Tensor> moments1_, moments2_;
};

} // namespace partita::rt
