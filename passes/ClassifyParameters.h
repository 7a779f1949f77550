//===- ClassifyParameters.h - trainable or frozen, per weight ------------===//
#pragma once
#include "compiler/ir/Graph.h"
#include "llvm/Support/Error.h"
#include <string>
#include <vector>

namespace partita {

/// One weight's classification, as classify-parameters left it on the Weight
/// node (attributes `trainable` = 0/1 and `role` = the reason).
struct ParameterClass {
  std::string name;
  bool trainable = true;
  std::string reason;
};

/// Whether a Weight node is a parameter: not marked frozen by
/// classify-parameters (an unclassified float weight is a parameter).
bool isTrainableWeight(const Node &weight);

/// Applies the user's overrides after the default rule: every weight whose
/// name matches one of `freeze` (a glob: `*`, `?`, `[...]`, matched against
/// the whole name) is frozen, then every one matching `trainable` is made
/// trainable (integer weights stay frozen: they have no gradient). A pattern
/// that matches no weight is an error naming it.
llvm::Error applyParameterOverrides(Graph &g, const std::vector<std::string> &freeze,
                                    const std::vector<std::string> &trainable);

/// Every Weight node's classification, in program order (one per name).
std::vector<ParameterClass> parameterClasses(const Graph &g);

} // namespace partita
