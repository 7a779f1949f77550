//===- NpyFuzzer.cpp - readNpy on .npy bytes ------------------------------===//
#include "FuzzInput.h"
#include "runtime/io/Npy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string &path = partita::fuzz::writeInput(data, size, ".npy");
  auto t = partita::rt::readNpy(path);
  if (!t)
    llvm::consumeError(t.takeError());
  return 0;
}
