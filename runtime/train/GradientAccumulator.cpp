//===- GradientAccumulator.cpp --------------------------------------------===//
#include "runtime/train/GradientAccumulator.h"
#include "runtime/kernels/KernelRegistry.h"
#include <algorithm>

namespace partita::rt {

GradientAccumulator::GradientAccumulator(Device &device, const LoopKernels &kernels, Program *loss,
                                         Program &gradients, std::vector<std::string> gradOutputs,
                                         std::vector<int64_t> numel, int64_t microBatches)
    : device_(device), kernels_(kernels), lossProgram_(loss), program_(gradients), names_(std::move(gradOutputs)), numel_(std::move(numel)),
      micro_(std::max<int64_t>(1, microBatches)) {
  const auto &outs = program_.outputNames();
  for (const std::string &n : names_)
    outputIndex_.push_back(std::find(outs.begin(), outs.end(), n) - outs.begin());
  grads_.assign(names_.size(), nullptr);
  dtypes_.assign(names_.size(), DType::F32);
  deferred_.assign(names_.size(), false);
  if (micro_ == 1)
    return;
  sums_.resize(names_.size());
  heldInside_.assign(names_.size(), false);
  for (size_t i = 0; i < names_.size(); ++i) {
    deferred_[i] = program_.reducedAsync(names_[i]);
    heldInside_[i] = program_.deferredInside(names_[i]);
  }
  lossDeferred_ = lossProgram_ && lossProgram_->reducedAsync(lossProgram_->outputNames()[0]);
}

llvm::Expected<std::unique_ptr<GradientAccumulator>>
GradientAccumulator::create(Device &device, Program *loss, Program &program, std::vector<std::string> gradOutputs,
                            std::vector<int64_t> numel, int64_t microBatches) {
  auto kernels = KernelRegistry::get().loopKernels(device);
  if (!kernels)
    return kernels.takeError();
  std::unique_ptr<GradientAccumulator> a(new GradientAccumulator(device, **kernels, loss, program,
                                                                 std::move(gradOutputs), std::move(numel), microBatches));
  for (size_t i = 0; i < a->sums_.size(); ++i) {
    if (a->heldInside_[i]) // its reduce-scatter sums the micro-batches itself
      continue;
    auto sum = DeviceTensor::allocate(device, DType::F32, {a->numel_[i]}, MemoryCategory::Gradients,
                                      "the summed gradient " + a->names_[i]);
    if (!sum)
      return sum.takeError();
    a->sums_[i] = std::move(*sum);
  }
  // The addends apply only to a reduction that does not defer: the last
  // micro-batch's. Their buffers live as long as this object.
  for (size_t i = 0; i < a->names_.size(); ++i)
    if (a->deferred_[i])
      if (auto err = program.setReductionAddend(a->names_[i], a->sums_[i].data()))
        return std::move(err);
  if (a->lossDeferred_) {
    auto addend = DeviceTensor::zeros(device, DType::F32, {}, MemoryCategory::Gradients, "the loss's partial sum");
    if (!addend)
      return addend.takeError();
    a->lossAddend_ = std::move(*addend);
    if (auto err = loss->setReductionAddend(loss->outputNames()[0], a->lossAddend_.data()))
      return std::move(err);
  }
  return std::move(a);
}

void GradientAccumulator::beforeForward(int64_t micro) {
  if (micro == 0)
    lossSum_ = 0;
  if (lossProgram_)
    lossProgram_->setDeferReductions(micro + 1 < micro_);
}

void GradientAccumulator::beforeBackward(int64_t micro) { program_.setDeferReductions(micro + 1 < micro_); }

void GradientAccumulator::afterLoss(int64_t micro, const std::vector<TensorView> &outputs) {
  bool last = micro + 1 == micro_;
  float loss = downloadScalar(device_, outputs[0].data);
  if (lossDeferred_ && !last) { // this rank's partial: reduced with the last micro-batch's
    lossPartial_ = micro == 0 ? loss : lossPartial_ + loss;
    device_.copyFromHost(lossAddend_.data(), &lossPartial_, sizeof lossPartial_);
  } else
    lossSum_ += loss;
}

llvm::Error GradientAccumulator::checkSizes(const std::vector<TensorView> &outputs) const {
  for (size_t i = 0; i < names_.size(); ++i) {
    DType t = outputIndex_[i] < outputs.size() ? outputs[outputIndex_[i]].dtype : DType::F32;
    if (outputIndex_[i] >= outputs.size() || outputs[outputIndex_[i]].numel() != numel_[i] ||
        (t != DType::F32 && !isHalfFloat(t)))
      return llvm::createStringError(
          llvm::inconvertibleErrorCode(),
          "the gradient program's output " + names_[i] + " is not the f32[" + std::to_string(numel_[i]) +
              "] (or bf16, fp16) the step program reads: the plan's programs do not fit together (recompile)");
  }
  return llvm::Error::success();
}

void GradientAccumulator::afterGradients(int64_t micro, const std::vector<TensorView> &outputs) {
  bool last = micro + 1 == micro_;
  for (size_t i = 0; i < names_.size(); ++i) {
    const TensorView &out = outputs[outputIndex_[i]];
    dtypes_[i] = out.dtype;
    if (micro_ == 1 || ((deferred_[i] || heldInside_[i]) && last)) { // complete: the program's own result
      grads_[i] = out.data;
      continue;
    }
    if (heldInside_[i]) // not computed before the last micro-batch
      continue;
    // Summed in float32 on the device; a half gradient (mixed precision)
    // is widened into it, and at the last the sum is rounded once into the
    // program's output, which the step reads.
    bool half = out.dtype != DType::F32;
    kernels_.accumulate(device_, sums_[i].data(), out.data, out.dtype, numel_[i], micro == 0);
    grads_[i] = sums_[i].data();
    if (half && last) {
      kernels_.round(device_, out.data, sums_[i].data(), out.dtype, numel_[i]);
      grads_[i] = out.data;
    }
  }
}

} // namespace partita::rt
