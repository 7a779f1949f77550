//===- GradientClipping.h - the global gradient norm and its clip ----------===//
//
// torch.nn.utils.clip_grad_norm_ over a tensor-parallel model: a gradient
// split over the tp ranks contributes its shards' squares summed over the tp
// group, a replicated one counts once. Computed by hand on the host until the
// compiler puts the norm in the step program (issue 11).
//===----------------------------------------------------------------------===//
#pragma once
#include "runtime/comm/Communicator.h"
#include <vector>

namespace partita::rt {

struct GradientShard {
  const float *data;
  int64_t count;
  bool sharded; // split over tp (its square sum is summed over the group)
};

/// `scale` times the global L2 norm of the gradients (`tp` null or of one
/// rank: no tp sum).
llvm::Expected<double> globalGradientNorm(llvm::ArrayRef<GradientShard> grads, Communicator *tp, double scale);

/// The factor that brings a gradient of norm `norm` to at most `maxNorm`
/// (torch's, with its 1e-6).
double clipCoefficient(double norm, double maxNorm);

} // namespace partita::rt
