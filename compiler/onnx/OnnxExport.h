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
  /// ONNX external data instead of inline, written one tensor at a time
  /// (created only when a weight goes there).
  std::string externalDataFile;
  /// Weights that live in an external data file already (the model's own)
  /// are written as references to it, never copied: ONNX external data
  /// (absolute location, offset, length) where the weight is a contiguous
  /// run of the file (a whole weight, a row shard), and otherwise the whole
  /// stored tensor's run plus the slice (keys partita_stored_shape,
  /// partita_view_start, partita_perm) that Partita's importer reads with
  /// ImportOptions::trustedLocations.
  bool weightsByReference = false;
};

llvm::Error exportOnnx(const Graph &g, llvm::StringRef path, const ExportOptions &opts = {});

} // namespace partita
