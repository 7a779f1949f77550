//===- GradientAccumulator.h - gradient sums over a step's micro-batches ---===//
//
// The forward program computes the loss, the backward every gradient; under
// data parallelism they also all-reduce them over dp themselves, in async buckets that
// compile placed where their last gradient is computed (coalesce-collectives).
// Over M micro-batches this sums each gradient, with every reduction run
// once: the program defers its reductions in micro-batches 1..M-1 (DDP's
// no_sync: their results are this rank's partial sums, kept here) and the
// last micro-batch's reductions add those sums in before they reduce
// (Program::setReductionAddend). Reductions are linear, so the sums are
// those of reducing every micro-batch. A reduce-scatter that defers
// (ZeRO-1's) sums the whole gradients in float32 in its own staging and
// reduces at the last micro-batch: nothing is kept here for it. Gradients the program does
// not reduce asynchronously (no dp, ZeRO-2's parts) are summed here as they
// come. A half gradient (mixed precision) is handed to the step as it is
// (one micro-batch), or summed in float32 and rounded once (several): a
// deferred reduction gets the float32 sums as its addend and rounds them with
// the last micro-batch's gradient before it reduces (Megatron's fp32 gradient
// accumulation; one reduction a step in the half type, as with one micro-batch).
// The sums live in device memory and are made by the device's loop kernels
// (LoopKernels.h); the loss comes back as a scalar copy.
//===----------------------------------------------------------------------===//
#pragma once
#include "runtime/core/DeviceTensor.h"
#include "runtime/executor/Program.h"
#include "runtime/kernels/LoopKernels.h"
#include <memory>
#include <string>
#include <vector>

namespace partita::rt {

class GradientAccumulator {
public:
  /// `gradOutputs[i]` names `gradients`' output of parameter i's gradient
  /// (f32, `numel[i]` elements); `loss`'s output 0 is the loss (the same
  /// program when one computes both; null on a pipeline stage before the
  /// last, which has none). The programs' deferred reductions get their
  /// addends (the sums kept here) once.
  static llvm::Expected<std::unique_ptr<GradientAccumulator>> create(Device &device, Program *loss, Program &gradients,
                                                                     std::vector<std::string> gradOutputs,
                                                                     std::vector<int64_t> numel, int64_t microBatches);

  /// Set the loss program, or the gradient program, up for micro-batch
  /// `micro` (0-based) of a step: the last one reduces, the others defer. (A
  /// pipeline schedule runs other micro-batches' forwards in between.)
  void beforeForward(int64_t micro);
  void beforeBackward(int64_t micro);
  /// Takes micro-batch `micro`'s loss program outputs (the loss: output 0).
  void afterLoss(int64_t micro, const std::vector<TensorView> &outputs);
  /// That the gradient program's outputs have the sizes given at create()
  /// (the step's gradient inputs): an error naming the first that does not.
  llvm::Error checkSizes(const std::vector<TensorView> &outputs) const;
  /// Takes micro-batch `micro`'s gradient program outputs (valid until its next run).
  void afterGradients(int64_t micro, const std::vector<TensorView> &outputs);

  /// Parameter i's gradient summed over the step's micro-batches (after the
  /// last afterRun; the program's output buffer or a sum kept here), of the
  /// program's output type: f32, or mixed precision's half type (its sum
  /// rounded into the last micro-batch's output).
  TensorView gradient(size_t i) const { return TensorView{dtypes_[i], {numel_[i]}, grads_[i]}; }
  /// The loss summed over the step's micro-batches.
  double lossSum() const { return lossSum_; }

private:
  GradientAccumulator(Device &device, const LoopKernels &kernels, Program *loss, Program &gradients,
                      std::vector<std::string> gradOutputs, std::vector<int64_t> numel, int64_t microBatches);
  Device &device_;
  const LoopKernels &kernels_;
  Program *lossProgram_;
  Program &program_;
  std::vector<std::string> names_;
  std::vector<int64_t> numel_;
  int64_t micro_;
  std::vector<size_t> outputIndex_;
  std::vector<bool> deferred_; // reduced by the program, deferred until the last micro-batch
  std::vector<bool> heldInside_; // summed by the program's reduce-scatter itself (ZeRO-1), complete at the last
  bool lossDeferred_ = false;
  std::vector<DeviceTensor> sums_; // per parameter (float32), with several micro-batches
  std::vector<void *> grads_;
  std::vector<DType> dtypes_; // the gradient outputs' types
  float lossPartial_ = 0;
  DeviceTensor lossAddend_; // lossPartial_ on the device: the deferred loss reduction's addend
  double lossSum_ = 0;
};

} // namespace partita::rt
