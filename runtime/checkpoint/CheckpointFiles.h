//===- CheckpointFiles.h - files written to last: flushed, then renamed ---===//
#pragma once
#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"
#include <string>

namespace partita::rt {

/// `dir`/`name`.
std::string joinPath(llvm::StringRef dir, llvm::StringRef name);

/// A file being written that reaches the disk whole before close() returns.
class DurableFile {
public:
  static llvm::Expected<DurableFile> create(const std::string &path);
  DurableFile(DurableFile &&o) noexcept : path_(std::move(o.path_)), fd_(o.fd_), offset_(o.offset_) { o.fd_ = -1; }
  ~DurableFile();
  llvm::Error write(const void *data, size_t bytes);
  uint64_t offset() const { return offset_; }
  /// fsync, then close.
  llvm::Error close();

private:
  DurableFile(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  std::string path_;
  int fd_;
  uint64_t offset_ = 0;
};

/// Writes `text` to `path` and flushes it to disk.
llvm::Error writeFileDurably(const std::string &path, llvm::StringRef text);
/// Flushes folder `dir`'s entries (a rename or a new file in it) to disk.
llvm::Error syncFolder(const std::string &dir);
/// Reads `bytes` bytes at `offset` of `path`.
llvm::Error readAt(const std::string &path, uint64_t offset, void *out, size_t bytes);

} // namespace partita::rt
