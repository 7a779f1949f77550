//===- TokenFile.cpp ------------------------------------------------------===//
#include "runtime/train/TokenFile.h"
#include "runtime/io/Npy.h"
#include <cstring>

namespace partita {

static llvm::Error fail(const llvm::Twine &msg) { return llvm::createStringError(llvm::inconvertibleErrorCode(), msg); }

llvm::Expected<TokenFile> TokenFile::open(llvm::StringRef path, llvm::StringRef dtype) {
  TokenFile f;
  f.path_ = path.str();
  if (path.endswith(".npy")) {
    auto t = rt::readNpy(path);
    if (!t)
      return t.takeError();
    if (isFloat(t->dtype()) || t->dtype() == DType::Bool)
      return fail(path + ": token ids must be integers, not " + dtypeName(t->dtype()));
    f.count_ = t->numel();
    f.npy_ = std::move(*t);
    return f;
  }
  if (dtype != "uint16" && dtype != "int32")
    return fail("--data-dtype '" + dtype + "': expected uint16 or int32");
  f.width_ = dtype == "uint16" ? 2 : 4;
  auto buf = llvm::MemoryBuffer::getFile(path, /*IsText=*/false, /*RequiresNullTerminator=*/false);
  if (!buf)
    return fail(path + ": cannot read: " + buf.getError().message());
  size_t bytes = (*buf)->getBufferSize();
  if (bytes % f.width_)
    return fail(path + ": " + llvm::Twine(bytes) + " bytes is not a whole number of " + dtype +
                " token ids (--data-dtype)");
  f.count_ = static_cast<int64_t>(bytes / f.width_);
  f.flat_ = std::move(*buf);
  return f;
}

int64_t TokenFile::operator[](int64_t i) const {
  if (!flat_)
    return npy_.intAt(i);
  const char *p = flat_->getBufferStart() + static_cast<size_t>(i) * width_;
  if (width_ == 2) {
    uint16_t v;
    std::memcpy(&v, p, 2);
    return v;
  }
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

llvm::Error TokenFile::checkRange(int64_t vocab, int64_t begin, int64_t end) const {
  if (vocab <= 0)
    return llvm::Error::success();
  if (end < 0)
    end = count_;
  for (int64_t i = begin; i < end; ++i) {
    int64_t id = (*this)[i];
    if (id < 0 || id >= vocab)
      return fail(path_ + ": token id " + llvm::Twine(id) + " at position " + llvm::Twine(i) +
                  " is outside the model's vocabulary [0, " + llvm::Twine(vocab) + ")");
  }
  return llvm::Error::success();
}

} // namespace partita
