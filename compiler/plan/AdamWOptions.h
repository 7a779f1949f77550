//===- AdamWOptions.h - AdamW's hyper-parameters --------------------------===//
#pragma once
#include <cmath>

namespace partita {

/// AdamW's hyper-parameters, defined here once: compile gives them to
/// add-optimizer (the AdamW nodes' attributes) and writes them to plan.json
/// (`optimizer`), where the training loop reads β1, β2 for the bias
/// corrections it feeds the step program. Defaults are torch.optim.AdamW's.
struct AdamWOptions {
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weightDecay = 0.01;
  /// Betas in [0, 1), eps finite and > 0, weight decay finite and >= 0.
  bool valid() const {
    return beta1 >= 0 && beta1 < 1 && beta2 >= 0 && beta2 < 1 && eps > 0 && std::isfinite(eps) &&
           weightDecay >= 0 && std::isfinite(weightDecay);
  }
};

} // namespace partita
