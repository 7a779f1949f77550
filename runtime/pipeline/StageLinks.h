//===- StageLinks.h - the weights a pipeline stage shares with another ----===//
//
// A pipeline's edges (activations forward, their gradients backward) are
// partita.Send and partita.Recv nodes in the stages' programs
// (passes/SplitPipeline.h, runtime/cpu/P2PKernels.cpp). What is left for the
// training loop is a trained weight two stages hold (Plan::pipelineWeights:
// a tied embedding's table on the first stage, its copy on the last): after
// the step's last backward each of the two sends its summed gradient to the
// other (without waiting, from a copy: PendingSends.h) and adds the other's,
// so both step with the one sum (the gradients are device memory: the
// send goes from a copy in the device's memory, the other's is received
// into device memory and added by the device's loop kernel). Message tag:
// pipelineEdges.size() + the entry's index.
//===----------------------------------------------------------------------===//
#pragma once
#include "compiler/plan/Plan.h"
#include "runtime/comm/Communicator.h"
#include "runtime/core/TensorView.h"
#include "runtime/kernels/LoopKernels.h"
#include <string>
#include <vector>

namespace partita::rt {

class StageLinks {
public:
  /// The shared weights of `stage` (a global stage: a model chunk under
  /// interleaving), reached over `pp` (null: no pipeline); the gradients are
  /// memory of `device`.
  static llvm::Expected<StageLinks> create(const Plan &plan, int64_t stage, Communicator *pp, Device &device);

  /// Sends this stage's summed gradient `grad` of parameter `param`;
  /// addSharedGradient then adds the other stage's into `grad`. The same two
  /// additions in either order: both sums are equal to the bit.
  llvm::Error sendSharedGradient(llvm::StringRef param, const TensorView &grad);
  llvm::Error addSharedGradient(llvm::StringRef param, const TensorView &grad);
  /// This stage's parameters whose gradients it sums with another stage's.
  std::vector<std::string> sharedParameters() const;

private:
  struct Link {
    int tag = 0;
    int peer = 0;          // the other stage's rank in the pp group
    int64_t peerStage = 0; // the other stage
    std::string value;     // this stage's parameter
  };
  const Link *sharedLink(llvm::StringRef param) const;
  Communicator *pp_ = nullptr;
  Device *device_ = nullptr;
  const LoopKernels *kernels_ = nullptr;
  std::vector<Link> shared_;
};

} // namespace partita::rt
