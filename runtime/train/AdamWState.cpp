//===- AdamWState.cpp -----------------------------------------------------===//
#include "runtime/train/AdamWState.h"
#include "runtime/train/HostTensor.h"
#include <cmath>

namespace partita::rt {

llvm::Expected<AdamWState> AdamWState::create(Program &step, llvm::ArrayRef<const TensorView *> params,
                                              const AdamWOptions &options) {
  AdamWState s(step, params, options);
  for (const TensorView *p : params) {
    s.moments1_.push_back(Tensor::zeros(p->dtype, p->shape));
    s.moments2_.push_back(Tensor::zeros(p->dtype, p->shape));
  }
  // AdamW is elementwise, so the step may update its inputs in place.
  for (size_t i = 0; i < params.size(); ++i) {
    std::string k = std::to_string(i);
    for (auto [name, buffer] : {std::pair<std::string, void *>{"p." + k + ".new", params[i]->data},
                                {"m." + k + ".new", viewOf(s.moments1_[i]).data},
                                {"v." + k + ".new", viewOf(s.moments2_[i]).data}})
      if (auto err = step.bindOutput(name, buffer))
        return std::move(err);
  }
  return s;
}

llvm::Error AdamWState::apply(int64_t t, float lr, llvm::ArrayRef<float *> grads) {
  float bc1 = static_cast<float>(1.0 - std::pow(options_.beta1, t)),
        bc2 = static_cast<float>(1.0 - std::pow(options_.beta2, t));
  Tensor lrT = Tensor::fromDoubles(DType::F32, {}, {lr}), bc1T = Tensor::fromDoubles(DType::F32, {}, {bc1}),
         bc2T = Tensor::fromDoubles(DType::F32, {}, {bc2});
  // Schedule scalars from the host, then p/g/m/v per parameter.
  llvm::StringMap<TensorView> feeds;
  feeds["lr"] = viewOf(lrT);
  feeds["bc1"] = viewOf(bc1T);
  feeds["bc2"] = viewOf(bc2T);
  for (size_t i = 0; i < params_.size(); ++i) {
    std::string k = std::to_string(i);
    feeds["p." + k] = *params_[i];
    feeds["g." + k] = TensorView{DType::F32, params_[i]->shape, grads[i]};
    feeds["m." + k] = viewOf(moments1_[i]);
    feeds["v." + k] = viewOf(moments2_[i]);
  }
  auto updated = step_->run(feeds);
  if (!updated)
    return updated.takeError();
  return llvm::Error::success();
}

} // namespace partita::rt
