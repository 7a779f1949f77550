//===- AddOptimizer.h - AdamW's options and the optimizer programs' IO ----===//
//
// add-optimizer (passes/AddOptimizer.cpp) appends torch.optim.AdamW to the
// global training graph, one partita.AdamW node per trained weight
// (compiler/ops/OptimizerOps.cpp defines it):
//   p ← p·(1 − lr·wd);  m ← β1·m + (1−β1)·g;  v ← β2·v + (1−β2)·g²
//   p ← p − (lr / bc1) · m / (√v / √bc2 + ε)      bc1 = 1−β1ᵗ, bc2 = 1−β2ᵗ
// and the global L2 norm of the gradients that clipping needs. Its nodes are
// tagged with the program they belong to (`program` attribute: "step" or
// "grad_norm"); split-programs cuts the graph into them. The names below are
// the contract between the compiler and the runtime's training loop.
//===----------------------------------------------------------------------===//
#pragma once
#include "compiler/pass/PassManager.h"
#include <cmath>
#include <memory>
#include <string>

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

/// The optimizer programs' inputs and outputs, by parameter name.
namespace optimizer_io {
/// The node attribute naming a node's program, and the programs (autodiff
/// tags the backward's nodes, add-optimizer the step's and grad_norm's).
using partita::kProgramAttr;
inline constexpr const char *kBackward = "backward", *kStep = "step", *kGradNorm = "grad_norm";
/// Scalars the host computes per step: the learning rate, the bias
/// corrections 1 − βᵗ, and the factor the summed gradients are multiplied by
/// (1 / micro-batches times the clip coefficient).
inline constexpr const char *kLr = "lr", *kBc1 = "bias_correction1", *kBc2 = "bias_correction2",
                            *kGradScale = "grad_scale";
/// grad_norm's output: the L2 norm of the summed gradients.
inline constexpr const char *kNorm = "grad_norm";
/// Under a pipeline, stage s's norm of its own gradients in the global graph
/// (its grad_norm program returns it as grad_norm).
inline std::string stageNorm(int64_t stage) { return std::string(kNorm) + ".stage" + std::to_string(stage); }
/// grad_norm or a stage's grad_norm.stage<s>.
inline bool isNorm(llvm::StringRef name) { return name == kNorm || name.startswith(std::string(kNorm) + ".stage"); }
/// The gradient the runtime accumulated from the forward program's output
/// grad.<p>, the moments, and the updated values (bound in place).
inline std::string gradient(const std::string &p) { return "accumulated_grad." + p; }
inline std::string moment1(const std::string &p) { return "adam_m." + p; }
inline std::string moment2(const std::string &p) { return "adam_v." + p; }
inline std::string updated(const std::string &v) { return "updated." + v; }
/// Mixed precision's float32 copy of half parameter p (half-parameters):
/// a weight of the step program, which AdamW updates in place.
inline std::string master(const std::string &p) { return "master." + p; }

/// Autodiff{loss-scale=1}'s input (f32[]): the backward's seed, fp16's loss
/// scale, which the training loop feeds (runtime/train/LossScaler.h).
inline constexpr const char *kLossScale = "loss_scale";
/// A node of the forward program (no program tag; not a weight or constant,
/// which go wherever they are read) and of the backward.
inline bool inForward(const Node &n) {
  return !n.is("Weight") && !n.is("Constant") && n.stringAttr(kProgramAttr, "").empty();
}
inline bool inBackward(const Node &n) { return n.stringAttr(kProgramAttr, "") == kBackward; }

/// Whether graph input `in` is read only by the optimizer's nodes (its state
/// and scalars: no batch, and no input of the forward program).
inline bool readOnlyByOptimizer(const Value &in) {
  for (const Node *u : in.users()) {
    std::string p = u->stringAttr(kProgramAttr, "");
    if (p != kStep && p != kGradNorm)
      return false;
  }
  return in.hasUsers();
}
} // namespace optimizer_io

/// The add-optimizer pass with `options` (partita-opt sets them as pass options).
std::unique_ptr<Pass> createAddOptimizer(const AdamWOptions &options);

} // namespace partita
