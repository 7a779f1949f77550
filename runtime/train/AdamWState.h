//===- AdamWState.h - the optimizer step program and its moments ----------===//
//
// The step program (add-optimizer's, passes/AddOptimizer.h) updates every
// parameter and its two moments in place: its outputs updated.<p> /
// updated.adam_m.<p> / updated.adam_v.<p> are bound to the forward program's
// weights and to the moment buffers the caller allocates (the rank's
// TrainState owns them in a training run). Each step feeds it the learning
// rate, the bias corrections 1 - beta^t from the plan's optimizer options and
// the factor the summed gradients are scaled by (copied to the device each
// step; the moments live there).
//===----------------------------------------------------------------------===//
#pragma once
#include "compiler/ir/Tensor.h"
#include "runtime/core/DeviceTensor.h"
#include "compiler/plan/AdamWOptions.h"
#include "compiler/plan/Names.h"
#include "runtime/executor/Program.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include <vector>

namespace partita::rt {

class AdamWState {
public:
  /// Zeroed device memory for parameter i's first (second: false) or second
  /// moment, of `type`; the caller owns it and keeps it for the run.
  using MomentAllocator = llvm::function_ref<llvm::Expected<TensorView>(size_t i, bool second, const TensorType &type)>;
  /// Binds `step`'s outputs to `params` (device buffers of the forward
  /// program's weights named `names`) and to moments from `allocate`, shaped
  /// as the step's moment inputs (ZeRO: the rank's part of a flat buffer).
  static llvm::Expected<AdamWState> create(Device &device, Program &step, llvm::ArrayRef<std::string> names,
                                           llvm::ArrayRef<const TensorView *> params, const AdamWOptions &options,
                                           MomentAllocator allocate);
  /// Optimizer step `t` (1-based) at learning rate `lr` with parameter i's
  /// gradient grads[i] (f32 or mixed precision's half type, as many elements
  /// as the step reads: like the parameter, or under ZeRO this rank's part
  /// of it), multiplied by `gradScale`.
  llvm::Error apply(int64_t t, float lr, float gradScale, llvm::ArrayRef<TensorView> grads);
  /// Parameter i's first (m) and second (v) moments, as the step reads them.
  TensorView moment1(size_t i) const;
  TensorView moment2(size_t i) const;

private:
  AdamWState(Device &device, Program &step, llvm::ArrayRef<std::string> names,
             llvm::ArrayRef<const TensorView *> params, const AdamWOptions &options)
      : device_(&device), step_(&step), names_(names.begin(), names.end()), params_(params.begin(), params.end()), options_(options) {}
  Device *device_;
  Program *step_;
  std::vector<std::string> names_;
  std::vector<const TensorView *> params_;
  AdamWOptions options_;
  std::vector<TensorView> moments1_, moments2_; // the caller's
  DeviceTensor scalars_; // lr, the bias corrections and the gradient scale
  std::vector<Shape> gradShapes_;
  std::vector<bool> readsParam_; // the step reads parameter i (no float32 master copy of it)
};

} // namespace partita::rt
