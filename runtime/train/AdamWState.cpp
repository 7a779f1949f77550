//===- AdamWState.cpp -----------------------------------------------------===//
#include "runtime/train/AdamWState.h"
#include <cmath>

namespace partita::rt {

namespace io = optimizer_io;

llvm::Expected<AdamWState> AdamWState::create(Device &device, Program &step, llvm::ArrayRef<std::string> names,
                                              llvm::ArrayRef<const TensorView *> params, const AdamWOptions &options,
                                              MomentAllocator allocate) {
  AdamWState s(device, step, names, params, options);
  auto scalars = DeviceTensor::allocate(device, DType::F32, {4}, MemoryCategory::Activations, "AdamW's scalars");
  if (!scalars)
    return scalars.takeError();
  s.scalars_ = std::move(*scalars);
  // The moments and the gradient are shaped as the step reads them: like
  // the parameter, or (ZeRO) this rank's part of its flat buffer.
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string &p = names[i];
    const TensorType *m = step.inputType(io::moment1(p)), *v = step.inputType(io::moment2(p)),
                     *g = step.inputType(io::gradient(p));
    if (!m || !v || !g)
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "the step program has no moments or gradient input for parameter '" + p + "'");
    auto m1 = allocate(i, /*second=*/false, *m);
    if (!m1)
      return m1.takeError();
    auto m2 = allocate(i, /*second=*/true, *v);
    if (!m2)
      return m2.takeError();
    s.moments1_.push_back(*m1);
    s.moments2_.push_back(*m2);
    s.gradShapes_.push_back(g->shape);
  }
  // AdamW is elementwise, so the step may update its inputs in place.
  for (size_t i = 0; i < params.size(); ++i) {
    const std::string &p = names[i];
    for (auto [name, buffer] : {std::pair<std::string, void *>{io::updated(p), params[i]->data},
                                {io::updated(io::moment1(p)), s.moments1_[i].data},
                                {io::updated(io::moment2(p)), s.moments2_[i].data}})
      if (auto err = step.bindOutput(name, buffer))
        return std::move(err);
    // Mixed precision: AdamW updates the step's float32 master copy in
    // place, and updated.<p> (bound above) is its rounding (half-parameters).
    if (const TensorView *master = step.staticTensor(io::master(p)))
      if (auto err = step.bindOutput(io::updated(io::master(p)), master->data))
        return std::move(err);
    s.readsParam_.push_back(step.inputType(p) != nullptr);
  }
  return s;
}

TensorView AdamWState::moment1(size_t i) const { return moments1_[i]; }
TensorView AdamWState::moment2(size_t i) const { return moments2_[i]; }

llvm::Error AdamWState::apply(int64_t t, float lr, float gradScale, llvm::ArrayRef<TensorView> grads) {
  float bc1 = static_cast<float>(1.0 - std::pow(options_.beta1, t)),
        bc2 = static_cast<float>(1.0 - std::pow(options_.beta2, t));
  // Schedule scalars from the host, then the parameter, its gradient and moments.
  const float scalars[4] = {lr, bc1, bc2, gradScale};
  device_->copyFromHost(scalars_.data(), scalars, sizeof scalars);
  llvm::StringMap<TensorView> feeds;
  const char *names[4] = {io::kLr, io::kBc1, io::kBc2, io::kGradScale};
  for (size_t k = 0; k < 4; ++k)
    feeds[names[k]] = TensorView{DType::F32, {}, device_->offset(scalars_.data(), k * sizeof(float))};
  for (size_t i = 0; i < params_.size(); ++i) {
    const std::string &p = names_[i];
    if (readsParam_[i]) // not with a master copy
      feeds[p] = *params_[i];
    feeds[io::gradient(p)] = TensorView{grads[i].dtype, gradShapes_[i], grads[i].data};
    feeds[io::moment1(p)] = moments1_[i];
    feeds[io::moment2(p)] = moments2_[i];
  }
  auto updated = step_->run(feeds);
  if (!updated)
    return updated.takeError();
  return llvm::Error::success();
}

} // namespace partita::rt
