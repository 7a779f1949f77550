//===- ToolCommon.h - shared by the command-line tools --------------------===//
#pragma once
#include "compiler/ir/Graph.h"
#include "compiler/onnx/OnnxImport.h"
#include "llvm/Support/Error.h"
#include <memory>

namespace partita {

/// Loads IR text (.pir or anything else) or an ONNX model (.onnx, or text
/// starting with '<') from `path`.
llvm::Expected<std::unique_ptr<Graph>> loadGraph(llvm::StringRef path, const ImportOptions &opts);
/// Same, from text already read (used per chunk of a split input file).
llvm::Expected<std::unique_ptr<Graph>> loadGraphFromText(llvm::StringRef text, llvm::StringRef path,
                                                         const ImportOptions &opts);
bool looksLikeOnnx(llvm::StringRef path, llvm::StringRef contents);

/// Prints "tool: error: msg" to stderr and returns 1.
int reportError(llvm::StringRef tool, llvm::Error err);

} // namespace partita
