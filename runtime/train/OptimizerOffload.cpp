//===- OptimizerOffload.cpp -----------------------------------------------===//
#include "runtime/train/OptimizerOffload.h"

namespace partita::rt {

llvm::Expected<OptimizerOffload> OptimizerOffload::create(Device &device, Device &host,
                                                          llvm::ArrayRef<const TensorView *> params,
                                                          llvm::ArrayRef<std::string> names) {
  OptimizerOffload o(device, host);
  o.params_.assign(params.begin(), params.end());
  o.names_.assign(names.begin(), names.end());
  for (size_t i = 0; i < params.size(); ++i) {
    const TensorView &p = *params[i];
    auto copy = DeviceTensor::allocate(host, p.dtype, p.shape, MemoryCategory::Parameters,
                                       "the host copy of " + names[i]);
    if (!copy)
      return copy.takeError();
    device.copyToHost(host.kernelAddress(copy->data()), p.data, p.bytes());
    o.hostParams_.push_back(std::move(*copy));
  }
  o.hostGrads_.resize(params.size());
  return o;
}

std::vector<const TensorView *> OptimizerOffload::parameters() const {
  std::vector<const TensorView *> out;
  for (const DeviceTensor &t : hostParams_) // the vector's buffer moves with this object: stable
    out.push_back(&t.view());
  return out;
}

llvm::Expected<std::vector<TensorView>> OptimizerOffload::gradientsDown(llvm::ArrayRef<TensorView> grads) {
  std::vector<TensorView> out;
  for (size_t i = 0; i < grads.size(); ++i) {
    const TensorView &g = grads[i];
    if (!hostGrads_[i].data()) {
      auto made = DeviceTensor::allocate(*host_, g.dtype, g.shape, MemoryCategory::Gradients,
                                         "the host copy of the gradient of " + names_[i]);
      if (!made)
        return made.takeError();
      hostGrads_[i] = std::move(*made);
    }
    device_->copyToHost(host_->kernelAddress(hostGrads_[i].data()), g.data, g.bytes());
    out.push_back(TensorView{g.dtype, g.shape, hostGrads_[i].data()});
  }
  return out;
}

void OptimizerOffload::parametersUp() {
  for (size_t i = 0; i < params_.size(); ++i)
    device_->copyFromHost(params_[i]->data, host_->kernelAddress(hostParams_[i].data()), params_[i]->bytes());
}

} // namespace partita::rt
