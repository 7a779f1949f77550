//===- GradientAccumulator.cpp --------------------------------------------===//
#include "runtime/train/GradientAccumulator.h"
#include <algorithm>
#include <cstring>

namespace partita::rt {

GradientAccumulator::GradientAccumulator(Program *loss, Program &gradients, std::vector<std::string> gradOutputs,
                                         std::vector<int64_t> numel, int64_t microBatches)
    : lossProgram_(loss), program_(gradients), names_(std::move(gradOutputs)), numel_(std::move(numel)),
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
    if (heldInside_[i]) // its reduce-scatter sums the micro-batches itself
      continue;
    sums_[i].resize(static_cast<size_t>(numel_[i]));
    sumsCharge_.resize(sumsCharge_.bytes() + sums_[i].size() * sizeof(float));
  }
  lossDeferred_ = lossProgram_ && lossProgram_->reducedAsync(lossProgram_->outputNames()[0]);
}

llvm::Expected<std::unique_ptr<GradientAccumulator>>
GradientAccumulator::create(Program *loss, Program &program, std::vector<std::string> gradOutputs,
                            std::vector<int64_t> numel, int64_t microBatches) {
  std::unique_ptr<GradientAccumulator> a(
      new GradientAccumulator(loss, program, std::move(gradOutputs), std::move(numel), microBatches));
  // The addends apply only to a reduction that does not defer: the last
  // micro-batch's. Their buffers live as long as this object.
  for (size_t i = 0; i < a->names_.size(); ++i)
    if (a->deferred_[i])
      if (auto err = program.setReductionAddend(a->names_[i], a->sums_[i].data()))
        return std::move(err);
  if (a->lossDeferred_)
    if (auto err = loss->setReductionAddend(loss->outputNames()[0], &a->lossPartial_))
      return std::move(err);
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
  float loss = *static_cast<const float *>(outputs[0].data);
  if (lossDeferred_ && !last) // this rank's partial: reduced with the last micro-batch's
    lossPartial_ = micro == 0 ? loss : lossPartial_ + loss;
  else
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
    if (out.dtype != DType::F32) { // a half gradient (mixed precision)
      addHalf(i, micro, out);
      continue;
    }
    float *g = static_cast<float *>(out.data);
    float *acc = sums_[i].data();
    grads_[i] = acc;
    int64_t n = numel_[i];
    if (micro == 0) {
      std::memcpy(acc, g, static_cast<size_t>(n) * sizeof(float));
      continue;
    }
#pragma omp parallel for if (n > (1 << 16))
    for (int64_t k = 0; k < n; ++k)
      acc[k] += g[k];
  }
}

void GradientAccumulator::addHalf(size_t i, int64_t micro, const TensorView &out) {
  std::vector<float> &acc = sums_[i];
  auto *h = static_cast<uint16_t *>(out.data);
  bool first = micro == 0, last = micro + 1 == micro_;
  int64_t n = numel_[i];
  float *a = acc.data();
#pragma omp parallel for if (n > (1 << 16))
  for (int64_t k = 0; k < n; ++k) {
    float v = widenHalf(out.dtype, h[k]);
    a[k] = first ? v : a[k] + v;
    if (last) // the step reads the sum rounded once, where the program left the last gradient
      h[k] = roundToHalf(out.dtype, a[k]);
  }
  grads_[i] = out.data;
}

} // namespace partita::rt
