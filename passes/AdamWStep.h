//===- AdamWStep.h - the optimizer step as a graph ------------------------===//
//
// torch.optim.AdamW on one rank's parameter shards, one partita.AdamW node per
// parameter (elementwise, so the same graph serves any tensor-parallel
// layout; compiler/ops/OptimizerOps.cpp defines it):
//   p ← p·(1 − lr·wd);  m ← β1·m + (1−β1)·g;  v ← β2·v + (1−β2)·g²
//   p ← p − (lr / bc1) · m / (√v / √bc2 + ε)      bc1 = 1−β1ᵗ, bc2 = 1−β2ᵗ
// Inputs: lr, bc1, bc2 (scalars the host computes per step, so schedules stay
// on the host), then p.i, g.i, m.i, v.i per parameter; outputs p.i.new,
// m.i.new, v.i.new.
//===----------------------------------------------------------------------===//
#pragma once
#include "compiler/ir/Graph.h"
#include <cmath>
#include <memory>

namespace partita {

/// AdamW's hyper-parameters, defined here once: compile builds the step
/// program from them and writes them to plan.json (`optimizer`), where the
/// training loop reads β1, β2 for the bias corrections it feeds the program.
/// Defaults are torch.optim.AdamW's.
struct AdamWOptions {
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weightDecay = 0.01;
  /// Betas in [0, 1), eps finite and > 0, weight decay finite and >= 0.
  bool valid() const {
    return beta1 >= 0 && beta1 < 1 && beta2 >= 0 && beta2 < 1 && eps > 0 && std::isfinite(eps) &&
           weightDecay >= 0 && std::isfinite(weightDecay);
  }
};

std::unique_ptr<Graph> buildAdamWStep(llvm::ArrayRef<TensorType> params, const AdamWOptions &opts, int64_t opset);

} // namespace partita
