//===- OnnxTextFuzzer.cpp - importOnnx on the ONNX text syntax ------------===//
#include "FuzzInput.h"
#include "compiler/ir/Verifier.h"
#include "compiler/onnx/OnnxImport.h"
#include "llvm/ADT/StringRef.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  // The importer takes the text path for files whose first non-blank byte is '<'.
  if (!llvm::StringRef(reinterpret_cast<const char *>(data), size).ltrim().startswith("<"))
    return -1;
  const std::string &path = partita::fuzz::writeInput(data, size, ".onnx");
  auto g = partita::importOnnx(path, partita::ImportOptions());
  if (!g) {
    llvm::consumeError(g.takeError());
    return 0;
  }
  llvm::consumeError(partita::verifyGraph(**g));
  return 0;
}
