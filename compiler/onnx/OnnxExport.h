//===- OnnxExport.h - Partita IR → standard ONNX --------------------------===//
//
// Writes a model that passes onnx.checker.check_model(full_check=True) and that
// ONNX Runtime runs. Partita's canonical ops (domain "partita": Linear, Gelu,
// FastGelu) are emitted together with model-local ONNX functions that define
// them in standard ops, so any ONNX consumer can run the file.
//
//===----------------------------------------------------------------------===//
#pragma once
#include "compiler/ir/Graph.h"
#include "llvm/Support/Error.h"

namespace partita {

struct ExportOptions {
  /// When set, weights go to this file (relative to the model's folder) as
  /// ONNX external data instead of inline.
  std::string externalDataFile;
};

llvm::Error exportOnnx(const Graph &g, llvm::StringRef path, const ExportOptions &opts = {});

} // namespace partita
