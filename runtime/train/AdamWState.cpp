//===- AdamWState.cpp -----------------------------------------------------===//
#include "runtime/train/AdamWState.h"
#include "runtime/train/HostTensor.h"
#include <cmath>

namespace partita::rt {

namespace io = optimizer_io;

llvm::Expected<AdamWState> AdamWState::create(Program &step, llvm::ArrayRef<std::string> names,
                                              llvm::ArrayRef<const TensorView *> params, const AdamWOptions &options) {
  AdamWState s(step, names, params, options);
  // The moments and the gradient are shaped as the step reads them: like
  // the parameter, or (ZeRO) this rank's part of its flat buffer.
  for (const std::string &p : names) {
    const TensorType *m = step.inputType(io::moment1(p)), *v = step.inputType(io::moment2(p)),
                     *g = step.inputType(io::gradient(p));
    if (!m || !v || !g)
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "the step program has no moments or gradient input for parameter '" + p + "'");
    s.moments1_.push_back(Tensor::zeros(m->dtype, m->shape));
    s.moments2_.push_back(Tensor::zeros(v->dtype, v->shape));
    s.charge_.resize(s.charge_.bytes() + s.moments1_.back().byteSize() + s.moments2_.back().byteSize());
    s.gradShapes_.push_back(g->shape);
  }
  // AdamW is elementwise, so the step may update its inputs in place.
  for (size_t i = 0; i < params.size(); ++i) {
    const std::string &p = names[i];
    for (auto [name, buffer] : {std::pair<std::string, void *>{io::updated(p), params[i]->data},
                                {io::updated(io::moment1(p)), viewOf(s.moments1_[i]).data},
                                {io::updated(io::moment2(p)), viewOf(s.moments2_[i]).data}})
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

TensorView AdamWState::moment1(size_t i) const { return viewOf(moments1_[i]); }
TensorView AdamWState::moment2(size_t i) const { return viewOf(moments2_[i]); }

llvm::Error AdamWState::apply(int64_t t, float lr, float gradScale, llvm::ArrayRef<TensorView> grads) {
  float bc1 = static_cast<float>(1.0 - std::pow(options_.beta1, t)),
        bc2 = static_cast<float>(1.0 - std::pow(options_.beta2, t));
  Tensor lrT = Tensor::fromDoubles(DType::F32, {}, {lr}), bc1T = Tensor::fromDoubles(DType::F32, {}, {bc1}),
         bc2T = Tensor::fromDoubles(DType::F32, {}, {bc2}), scaleT = Tensor::fromDoubles(DType::F32, {}, {gradScale});
  // Schedule scalars from the host, then the parameter, its gradient and moments.
  llvm::StringMap<TensorView> feeds;
  feeds[io::kLr] = viewOf(lrT);
  feeds[io::kBc1] = viewOf(bc1T);
  feeds[io::kBc2] = viewOf(bc2T);
  feeds[io::kGradScale] = viewOf(scaleT);
  for (size_t i = 0; i < params_.size(); ++i) {
    const std::string &p = names_[i];
    if (readsParam_[i]) // not with a master copy
      feeds[p] = *params_[i];
    feeds[io::gradient(p)] = TensorView{grads[i].dtype, gradShapes_[i], grads[i].data};
    feeds[io::moment1(p)] = viewOf(moments1_[i]);
    feeds[io::moment2(p)] = viewOf(moments2_[i]);
  }
  auto updated = step_->run(feeds);
  if (!updated)
    return updated.takeError();
  return llvm::Error::success();
}

} // namespace partita::rt
