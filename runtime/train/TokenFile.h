//===- TokenFile.h - training data: token ids read in place ---------------===//
//
// A flat little-endian file of uint16 (nanoGPT's train.bin) or int32 ids is
// memory-mapped and read where it lies, so a corpus of billions of tokens
// costs no memory; an .npy (any integer type) is loaded.
//===----------------------------------------------------------------------===//
#pragma once
#include "compiler/ir/Tensor.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/MemoryBuffer.h"
#include <memory>

namespace partita {

class TokenFile {
public:
  /// `dtype` (uint16 or int32) applies to flat files; .npy files carry their own.
  static llvm::Expected<TokenFile> open(llvm::StringRef path, llvm::StringRef dtype = "uint16");

  int64_t size() const { return count_; }
  int64_t operator[](int64_t i) const;
  /// The first id outside [0, vocab), as an error naming the file and position.
  llvm::Error checkRange(int64_t vocab, int64_t begin = 0, int64_t end = -1) const;
  const std::string &path() const { return path_; }

private:
  std::string path_;
  std::shared_ptr<llvm::MemoryBuffer> flat_; // mapped flat file
  size_t width_ = 2;                         // bytes per id in flat_
  Tensor npy_;                               // or the loaded .npy
  int64_t count_ = 0;
};

} // namespace partita
