//===- MixedPrecision.h - what the mixed-precision passes share -----------===//
//
// mixed-precision (MixedPrecision.cpp), save-half-activations
// (SaveHalfActivations.cpp) and half-gradients (HalfGradients.cpp).
//===----------------------------------------------------------------------===//
#pragma once
#include "compiler/ir/Graph.h"
#include "compiler/pass/PassManager.h"
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

/// A Cast of `x` to `to` named `out`, in `program` (none: the forward) and
/// on pipeline stage `stage` (-1: none), laid out as `x`.
inline Value *castTo(Graph &g, Value *x, DType to, const std::string &out, const std::string &program,
                     int64_t stage) {
  Node *c = g.createNode("Cast", {x}, {out});
  c->setAttr("to", Attribute::ofInt(dtypeToOnnx(to)));
  if (!program.empty())
    c->setAttr(kProgramAttr, Attribute::ofString(program));
  if (stage >= 0)
    c->setAttr(kStageAttr, Attribute::ofInt(stage));
  c->output()->type() = TensorType{to, x->type().shape, true};
  c->output()->sharding() = x->sharding();
  return c->output();
}

/// A pass whose required option dtype=bf16|fp16 names the half type.
class HalfTypePass : public Pass {
protected:
  /// The half type, or an error naming the missing option.
  llvm::Error requireHalfType() {
    if (dtype_.value().empty())
      return passError(name(), "option dtype (bf16 or fp16) is required");
    half_ = parseHalfType(dtype_.value());
    return llvm::Error::success();
  }
  PassOption<std::string> dtype_{this, "dtype", "", "the half type (required)", oneOf({"bf16", "fp16"})};
  std::optional<DType> half_;
};

} // namespace partita
