//===- Npy.h - numpy .npy files (format 1.0/2.0, little-endian, C order) --===//
#pragma once
#include "compiler/ir/Tensor.h"
#include "llvm/Support/Error.h"

namespace partita::rt {

llvm::Expected<Tensor> readNpy(llvm::StringRef path);
llvm::Error writeNpy(llvm::StringRef path, DType dtype, llvm::ArrayRef<int64_t> shape, const void *data);
/// Writes each tensor as DIR/NAME.npy (creating DIR).
llvm::Error writeNpyFiles(llvm::StringRef dir, llvm::ArrayRef<std::string> names, llvm::ArrayRef<Tensor> values);

} // namespace partita::rt
