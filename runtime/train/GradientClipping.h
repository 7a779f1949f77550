//===- GradientClipping.h - the global gradient norm and its clip ----------===//
//
// torch.nn.utils.clip_grad_norm_ over a parallel model: the grad_norm
// program (add-optimizer's) computes the L2 norm of every gradient, its
// reductions over split gradients placed by the compiler; the host turns the
// norm into torch's clip coefficient.
//===----------------------------------------------------------------------===//
#pragma once
#include "runtime/executor/Program.h"
#include <vector>

namespace partita::rt {

/// Runs `gradNorm` on the gradients of the parameters `names` (f32 buffers
/// shaped as the program reads them: like `params`, or under ZeRO-2 the
/// rank's part of each) and returns its norm.
llvm::Expected<double> globalGradientNorm(Program &gradNorm, llvm::ArrayRef<std::string> names,
                                          llvm::ArrayRef<const TensorView *> params, llvm::ArrayRef<TensorView> grads);

/// The factor that brings a gradient of norm `norm` to at most `maxNorm`
/// (torch's, with its 1e-6).
double clipCoefficient(double norm, double maxNorm);

} // namespace partita::rt
