//===- ToolCommon.cpp -----------------------------------------------------===//
#include "tools/ToolCommon.h"
#include "compiler/ir/Parser.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

namespace partita {

bool looksLikeOnnx(llvm::StringRef path, llvm::StringRef contents) {
  return path.endswith(".onnx") || contents.ltrim().startswith("<");
}

llvm::Expected<std::unique_ptr<Graph>> loadGraph(llvm::StringRef path, const ImportOptions &opts) {
  if (path.endswith(".onnx"))
    return importOnnx(path, opts);
  auto buf = llvm::MemoryBuffer::getFile(path);
  if (!buf)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   path + ": cannot read file: " + buf.getError().message());
  return loadGraphFromText((*buf)->getBuffer(), path, opts);
}

llvm::Expected<std::unique_ptr<Graph>> loadGraphFromText(llvm::StringRef text, llvm::StringRef path,
                                                         const ImportOptions &opts) {
  if (looksLikeOnnx(path, text))
    return importOnnx(path, opts);
  return parseGraph(text, path);
}

int reportError(llvm::StringRef tool, llvm::Error err) {
  llvm::errs() << tool << ": error: " << llvm::toString(std::move(err)) << "\n";
  return 1;
}

} // namespace partita
