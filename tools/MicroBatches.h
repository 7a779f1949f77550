//===- MicroBatches.h - inference over several batches of the compiled shape ===//
//
// A plan's programs run one batch of the shape they were compiled for. An
// inference launch given inputs of k times that batch (the first dimension)
// runs them as k micro-batches, in order: under a pipeline each stage sends
// micro-batch j on and starts j + 1 while the next stage runs j (pipelined
// inference, GPipe's forward half). The outputs are the micro-batches'
// concatenated on their first dimension, the batch.
//===----------------------------------------------------------------------===//
#pragma once
#include "compiler/ir/Tensor.h"
#include "compiler/plan/Plan.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Error.h"
#include <vector>

namespace partita {

struct MicroBatches {
  /// Each micro-batch's inputs; an input given at the compiled shape is in
  /// every one (position ids, a mask shared by the batch).
  std::vector<llvm::StringMap<Tensor>> batches;
};

/// Splits `given` over micro-batches: an input whose first dimension is k
/// times the compiled one (`compiled`, by name), the rest equal, is k
/// micro-batches' slices. Inputs split into different counts are an error
/// naming both; one matching neither shape is left whole (the program names
/// it).
llvm::Expected<MicroBatches> splitMicroBatches(const std::vector<TensorSpec> &compiled,
                                               const llvm::StringMap<Tensor> &given);

/// Output `name` of every micro-batch (`parts`, in order) concatenated on its
/// first dimension; a scalar output of several micro-batches is an error
/// naming it.
llvm::Expected<Tensor> concatMicroBatches(llvm::StringRef name, const std::vector<Tensor> &parts);

} // namespace partita
