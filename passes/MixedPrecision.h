//===- MixedPrecision.h - what the mixed-precision passes share -----------===//
//
// mixed-precision (MixedPrecision.cpp), save-half-activations
// (SaveHalfActivations.cpp) and half-gradients (HalfGradients.cpp).
//===----------------------------------------------------------------------===//
#pragma once
#include "compiler/ir/Graph.h"
#include "llvm/ADT/StringSwitch.h"
#include <optional>

namespace partita {

/// The half type a pass option names: bf16 or fp16.
inline std::optional<DType> parseHalfType(llvm::StringRef name) {
  return llvm::StringSwitch<std::optional<DType>>(name)
      .Case("bf16", DType::BF16)
      .Case("fp16", DType::F16)
      .Default(std::nullopt);
}

/// Ops whose float results are some of their float operands' elements,
/// moved: of rounded operands, already rounded.
inline bool movesElements(const Node &n) {
  return n.is("Reshape") || n.is("Transpose") || n.is("Slice") || n.is("Gather") || n.is("Concat") ||
         n.is("Split") || n.is("Squeeze") || n.is("Unsqueeze") || n.is("Expand") || n.is("Identity") ||
         n.is("Flatten") || n.is("Tile") || n.is("GatherElements") || n.is("Pad");
}

} // namespace partita
