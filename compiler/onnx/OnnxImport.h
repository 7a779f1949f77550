//===- OnnxImport.h - ONNX model → Partita IR -----------------------------===//
#pragma once
#include "compiler/ir/Graph.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Error.h"
#include <memory>

namespace partita {

struct ImportOptions {
  /// Fixes input dimensions: name → full static shape (from --input-shape).
  llvm::StringMap<Shape> inputShapes;
  /// How diagnostics name the option that sets input shapes.
  std::string shapeFlag = "--input-shape";
};

/// Reads binary .onnx (with or without external data) or the ONNX text syntax
/// (a file whose first non-blank character is '<'). Weights are held by
/// reference; external data is checked for presence and size, not read.
/// Errors name the file, and the node, op and opset where there is one.
llvm::Expected<std::unique_ptr<Graph>> importOnnx(llvm::StringRef path, const ImportOptions &opts);

/// Parses "ids=2x64" into (name, shape).
llvm::Error parseInputShape(llvm::StringRef spec, ImportOptions &opts);

} // namespace partita
