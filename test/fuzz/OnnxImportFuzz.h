//===- OnnxImportFuzz.h - importOnnx (+ verify) on one fuzz input ---------===//
//
// The importer takes its text path for files whose first non-blank byte is
// '<' and the binary path otherwise; the two targets split the inputs so.
//===----------------------------------------------------------------------===//
#pragma once
#include "FuzzInput.h"
#include "compiler/ir/Verifier.h"
#include "compiler/onnx/OnnxImport.h"
#include "llvm/ADT/StringRef.h"

namespace partita::fuzz {

/// Imports and verifies `data` when its syntax (text or binary) is `text`;
/// -1 (not added to the corpus) for the other syntax's inputs.
inline int importOnnxInput(const uint8_t *data, size_t size, bool text) {
  if (llvm::StringRef(reinterpret_cast<const char *>(data), size).ltrim().startswith("<") != text)
    return -1;
  const std::string &path = writeInput(data, size, ".onnx");
  auto g = importOnnx(path, ImportOptions());
  if (!g) {
    llvm::consumeError(g.takeError());
    return 0;
  }
  llvm::consumeError(verifyGraph(**g));
  return 0;
}

} // namespace partita::fuzz
