//===- ClassifyParameters.h - trainable or frozen, per weight ------------===//
#pragma once
#include "compiler/ir/Graph.h"
#include "llvm/Support/Error.h"
#include <optional>
#include <string>
#include <utility>
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

/// The names a trainable-names file lists (--trainable-file), with the line
/// each is on (1-based).
struct TrainableList {
  std::string path;
  std::vector<std::pair<unsigned, std::string>> names;
};

/// Reads a trainable-names file: one initializer name per line; blank lines
/// and `#` comments (from a `#` at the start of a line or after a blank to
/// the end of the line) are ignored, the blanks around a name trimmed. A
/// file that cannot be read is an error naming it.
llvm::Expected<TrainableList> readTrainableList(llvm::StringRef path);

/// The user's overrides of the default rule, applied in this order.
struct ParameterOverrides {
  /// When set: exactly the listed weights are trainable, every other float
  /// weight is frozen ("not in FILE"). A listed name that is no weight, or an
  /// integer weight, is an error naming the file, the line and the name.
  std::optional<TrainableList> list;
  /// Every weight matching one of these globs (`*`, `?`, `[...]`, against the
  /// whole name) is frozen.
  std::vector<std::string> freeze;
  /// Then every one matching one of these is made trainable (integer weights
  /// stay frozen: they have no gradient).
  std::vector<std::string> trainable;
};

/// Applies `o` after the default rule. A glob that matches no weight is an
/// error naming it.
llvm::Error applyParameterOverrides(Graph &g, const ParameterOverrides &o);

/// Every Weight node's classification, in program order (one per name).
std::vector<ParameterClass> parameterClasses(const Graph &g);

} // namespace partita

namespace partita {

/// A trainable weight that several nodes of one kind read (five
/// LayerNormalization scales, a bias of every Linear): one parameter the
/// training updates for all of them. A model may mean it (layers shared as
/// in ALBERT), but torch.onnx.export in eval mode also merges initializers
/// that are merely equal, which a fresh model's norm weights and zero biases
/// are. One line per such weight (at most `limit`), for compile to warn with.
std::vector<std::string> sharedParameterWarnings(const Graph &g, size_t limit = 8);

} // namespace partita
