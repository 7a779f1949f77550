//===- ParameterOutput.cpp ------------------------------------------------===//
#include "runtime/train/ParameterOutput.h"
#include "runtime/io/Npy.h"
#include "runtime/train/HostTensor.h"
#include "llvm/Support/Path.h"

namespace partita::rt {

llvm::Error writeParameterShards(llvm::StringRef outDir, int rank, llvm::ArrayRef<std::string> names,
                                 llvm::ArrayRef<const TensorView *> params) {
  llvm::SmallString<256> dir(outDir);
  llvm::sys::path::append(dir, "rank" + std::to_string(rank));
  std::vector<Tensor> values;
  for (const TensorView *p : params)
    values.push_back(hostCopy(*p));
  return writeNpyFiles(dir, names, values);
}

} // namespace partita::rt
