//===- Parser.h - reads the text form printed by Printer.h ----------------===//
#pragma once
#include "compiler/ir/Graph.h"
#include "llvm/Support/Error.h"
#include <memory>

namespace partita {

/// Parses one graph. Errors read "file:line:col: message".
llvm::Expected<std::unique_ptr<Graph>> parseGraph(llvm::StringRef text,
                                                  llvm::StringRef filename);

} // namespace partita
