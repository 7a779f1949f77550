//===- Names.h - the names compile writes and the runtime reads -----------===//
//
// Mesh axes, programs, and the inputs and outputs the training loop binds by
// name: the contract between the compiler's passes (which make these names)
// and the runtime and tools (which look them up). One header, below passes/,
// so the runtime reads it without including a pass.
//===----------------------------------------------------------------------===//
#pragma once
#include "compiler/ir/Graph.h"
#include <string>

namespace partita {

/// The device mesh's axes, as compile lays them out (pp outermost, dp, then
/// tp innermost: a tensor-parallel group's ranks are neighbours).
namespace mesh_axis {
inline constexpr const char *kPipeline = "pp", *kData = "dp", *kTensor = "tp";
} // namespace mesh_axis

/// The programs split-programs cuts a graph into.
inline constexpr const char *kForwardProgram = "forward";

/// The optimizer programs' inputs and outputs, by parameter name.
namespace optimizer_io {
/// The node attribute naming a node's program, and the programs (autodiff
/// tags the backward's nodes, add-optimizer the step's and grad_norm's).
using partita::kProgramAttr;
inline constexpr const char *kBackward = "backward", *kStep = "step", *kGradNorm = "grad_norm";
/// The forward (or backward) program's output of parameter p's gradient.
inline constexpr const char *kGradPrefix = "grad.";
inline std::string gradOutput(const std::string &p) { return kGradPrefix + p; }
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
} // namespace optimizer_io

} // namespace partita
