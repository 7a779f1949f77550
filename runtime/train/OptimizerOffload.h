//===- OptimizerOffload.h - the optimizer step on the host ---------------===//
//
// DeepSpeed's offload_optimizer {device: cpu} (`launch --offload-optimizer`):
// the step programs run on the host's CPU device (Session::optimizerDevice),
// so the fp32 masters (the step's own weights) and AdamW's moments are host
// memory and the update is the host's work. What crosses over each step:
// the summed gradients, copied down before the step, and the updated
// parameters (the forward's weights, or under mixed precision their
// rounding), copied up after it. This object owns the host side of both:
// one host buffer per parameter, as the forward holds it, that the step
// reads and writes in place of the device's, and one per gradient.
//
// The copies run one parameter after another once the step is due, not
// overlapped with the backward per bucket as DeepSpeed's are.
//===----------------------------------------------------------------------===//
#pragma once
#include "runtime/core/DeviceTensor.h"
#include <vector>

namespace partita::rt {

class OptimizerOffload {
public:
  /// Host copies (on `host`) of `params`, the forward's weights on `device`,
  /// holding their values now.
  static llvm::Expected<OptimizerOffload> create(Device &device, Device &host,
                                                 llvm::ArrayRef<const TensorView *> params,
                                                 llvm::ArrayRef<std::string> names);
  /// The step's parameters: the host copies, in the order given.
  std::vector<const TensorView *> parameters() const;
  /// Copies each of `grads` (device memory) into its host buffer (made at
  /// the first call, as large as the gradient); the host views.
  llvm::Expected<std::vector<TensorView>> gradientsDown(llvm::ArrayRef<TensorView> grads);
  /// Copies the host parameters, as the step left them, up into the
  /// forward's weights.
  void parametersUp();

private:
  OptimizerOffload(Device &device, Device &host) : device_(&device), host_(&host) {}
  Device *device_, *host_;
  std::vector<const TensorView *> params_; // the device's
  std::vector<std::string> names_;
  std::vector<DeviceTensor> hostParams_, hostGrads_;
};

} // namespace partita::rt
