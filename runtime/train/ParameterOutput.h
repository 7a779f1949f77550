//===- ParameterOutput.h - a rank's trained parameter shards --------------===//
//
// Each rank writes its shards as <out>/rank<k>/<name>.npy (`partita merge`
// reads them back into the model).
//===----------------------------------------------------------------------===//
#pragma once
#include "runtime/core/TensorView.h"
#include "llvm/Support/Error.h"
#include <string>
#include <vector>

namespace partita::rt {

/// Writes parameter `names[i]` from device buffer `params[i]` (host-readable: the CPU device).
llvm::Error writeParameterShards(llvm::StringRef outDir, int rank, llvm::ArrayRef<std::string> names,
                                 llvm::ArrayRef<const TensorView *> params);

} // namespace partita::rt
