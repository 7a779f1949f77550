//===- StageLinks.cpp -----------------------------------------------------===//
#include "compiler/plan/Names.h"
#include "runtime/pipeline/StageLinks.h"
#include "runtime/comm/PendingSends.h"
#include "runtime/core/DeviceTensor.h"
#include "runtime/kernels/KernelRegistry.h"

namespace partita::rt {

static llvm::Error fail(const llvm::Twine &msg) { return llvm::createStringError(llvm::inconvertibleErrorCode(), msg); }

llvm::Expected<StageLinks> StageLinks::create(const Plan &plan, int64_t stage, Communicator *pp, Device &device) {
  StageLinks s;
  s.pp_ = pp;
  s.device_ = &device;
  auto kernels = KernelRegistry::get().loopKernels(device);
  if (!kernels)
    return kernels.takeError();
  s.kernels_ = *kernels;
  for (size_t i = 0; i < plan.pipelineWeights.size(); ++i) {
    const Plan::Edge &e = plan.pipelineWeights[i];
    if (e.from != stage && e.to != stage)
      continue;
    if (!pp)
      return fail("stage " + llvm::Twine(stage) + " shares weight '" + e.value + "' with another stage, but has no "
                  "pp group");
    Link l;
    l.tag = static_cast<int>(plan.pipelineEdges.size() + i);
    l.value = e.from == stage ? e.value : sharedWeightCopy(e.value, e.to);
    l.peerStage = e.from == stage ? e.to : e.from;
    l.peer = static_cast<int>(l.peerStage % plan.stages());
    s.shared_.push_back(std::move(l));
  }
  return std::move(s);
}

const StageLinks::Link *StageLinks::sharedLink(llvm::StringRef param) const {
  for (const Link &l : shared_)
    if (l.value == param)
      return &l;
  return nullptr;
}

std::vector<std::string> StageLinks::sharedParameters() const {
  std::vector<std::string> out;
  for (const Link &l : shared_)
    out.push_back(l.value);
  return out;
}

llvm::Error StageLinks::sendSharedGradient(llvm::StringRef param, const TensorView &grad) {
  const Link *l = sharedLink(param);
  if (!l)
    return fail("stage shares no weight '" + param + "' with another");
  auto failed = [&](llvm::Error err) {
    return fail("sending the gradient of shared weight '" + param + "' to " + pipelinePeer(l->peerStage, mesh_axis::kPipeline, l->peer) + ": " +
                llvm::toString(std::move(err)));
  };
  PendingSends &sends = PendingSends::process();
  auto copy = sends.allocate(*device_, grad.bytes());
  if (!copy)
    return failed(copy.takeError());
  device_->copyOnDevice(*copy, grad.data, grad.bytes());
  if (auto err = sends.start(*pp_, *device_, *copy, grad.bytes(), static_cast<size_t>(grad.numel()), grad.dtype,
                             l->peer, l->tag))
    return failed(std::move(err));
  return llvm::Error::success();
}

llvm::Error StageLinks::addSharedGradient(llvm::StringRef param, const TensorView &grad) {
  const Link *l = sharedLink(param);
  if (!l || (grad.dtype != DType::F32 && !isHalfFloat(grad.dtype)))
    return fail("stage shares no f32 (or bf16, fp16) weight '" + param + "' with another");
  // Received into the device's memory (the communicator writes where its kernels read).
  auto theirs = DeviceTensor::allocate(*device_, grad.dtype, grad.shape, MemoryCategory::Communication,
                                       "a shared weight's gradient");
  if (!theirs)
    return theirs.takeError();
  if (auto err = pp_->recv(device_->kernelAddress(theirs->data()), static_cast<size_t>(grad.numel()), grad.dtype,
                           l->peer, l->tag))
    return fail("receiving the gradient of shared weight '" + param + "' from " + pipelinePeer(l->peerStage, mesh_axis::kPipeline, l->peer) + ": " +
                llvm::toString(std::move(err)));
  // A half gradient is summed in float32 and rounded once, as the dp all-reduce sums it.
  kernels_->add(*device_, theirs->data(), grad.data, grad.dtype, grad.numel());
  return llvm::Error::success();
}

} // namespace partita::rt
