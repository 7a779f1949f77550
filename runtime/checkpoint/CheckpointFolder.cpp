//===- CheckpointFolder.cpp - the checkpoint folder's rules ---------------===//
#include "runtime/checkpoint/Checkpoint.h"
#include "runtime/checkpoint/CheckpointFiles.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

namespace partita::rt {

static llvm::Error fail(const llvm::Twine &msg) { return llvm::createStringError(llvm::inconvertibleErrorCode(), msg); }

std::string joinPath(llvm::StringRef a, llvm::StringRef b) {
  llvm::SmallString<256> p(a);
  llvm::sys::path::append(p, b);
  return std::string(p);
}

const char *const kPartialMarker = ".partita-checkpoint-partial";

std::string checkpointName(int64_t step) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "step-%08lld", static_cast<long long>(step));
  return buf;
}

/// Whether `name` is one of the entries --save writes in its folder.
static bool savedEntry(llvm::StringRef name) {
  if (name == kLatestFile || name == std::string(kLatestFile) + ".partial" || name == kSaveLock)
    return true;
  if (!name.consume_front("step-"))
    return false;
  name.consume_back(".partial");
  return name.size() >= 8 && llvm::all_of(name, [](char c) { return c >= '0' && c <= '9'; });
}

llvm::Error checkCheckpointDir(llvm::StringRef dir, llvm::ArrayRef<int64_t> steps) {
  if (!llvm::sys::fs::exists(dir))
    return llvm::Error::success();
  if (!llvm::sys::fs::is_directory(dir))
    return fail("--save " + dir + " is a file, not a folder");
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(dir, ec), end; it != end && !ec; it.increment(ec)) {
    llvm::StringRef name = llvm::sys::path::filename(it->path());
    if (!savedEntry(name))
      return fail("--save " + dir + " holds '" + name +
                  "', which no Partita checkpoint has: give a new or empty folder, or one an earlier --save wrote");
    // An unfinished save is removed by the next save of its step: only one
    // that is empty or carries Partita's marker.
    if (!name.endswith(".partial") || name.startswith(kLatestFile))
      continue;
    std::error_code inner;
    llvm::sys::fs::directory_iterator first(it->path(), inner);
    if (!inner && first != llvm::sys::fs::directory_iterator() && !llvm::sys::fs::exists(joinPath(it->path(), kPartialMarker)))
      return fail("--save " + dir + " holds " + name + ", which is no unfinished save of Partita's (no " +
                  kPartialMarker + "): remove it yourself");
  }
  if (ec)
    return fail("--save " + dir + ": " + ec.message());
  // A run that saves here now holds the lock (CheckpointWriter).
  if (int fd = ::open(joinPath(dir, kSaveLock).c_str(), O_RDONLY | O_CLOEXEC); fd >= 0) {
    bool held = ::flock(fd, LOCK_SH | LOCK_NB) != 0; // shared: launchers probing at once do not clash
    ::close(fd);
    if (held)
      return fail("--save " + dir + ": another run is saving into it (" + joinPath(dir, kSaveLock) +
                  " is locked); give each run a folder of its own");
  }
  for (int64_t step : steps)
    if (llvm::sys::fs::exists(joinPath(dir, checkpointName(step))))
      return fail("--save " + dir + " already holds " + checkpointName(step) +
                  ", which this run would save again: give another folder, or remove it yourself");
  return llvm::Error::success();
}

llvm::Expected<std::string> resolveCheckpoint(llvm::StringRef path) {
  if (llvm::sys::fs::exists(joinPath(path, kCheckpointIndex)))
    return path.str();
  std::string latest = joinPath(path, kLatestFile);
  auto buf = llvm::MemoryBuffer::getFile(latest);
  std::string named;
  if (buf) {
    llvm::StringRef name = (*buf)->getBuffer().trim();
    if (!savedEntry(name) || name.endswith(".partial") || name == kLatestFile || name == kSaveLock)
      return fail(latest + " names '" + name + "', which is no checkpoint folder");
    if (!llvm::sys::fs::exists(joinPath(joinPath(path, name), kCheckpointIndex)))
      return fail(latest + " names " + name + ", which has no " + kCheckpointIndex);
    named = name.str();
  }
  // `latest` moves after its checkpoint is in place: a save killed between
  // the two left a newer complete checkpoint, which is the one to go on from.
  std::string newest = named;
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(path, ec), end; it != end && !ec; it.increment(ec)) {
    llvm::StringRef name = llvm::sys::path::filename(it->path());
    if (savedEntry(name) && name.startswith("step-") && !name.endswith(".partial") && name > newest &&
        llvm::sys::fs::exists(joinPath(it->path(), kCheckpointIndex)))
      newest = name.str();
  }
  if (newest.empty())
    return fail("--resume " + path + ": no " + kCheckpointIndex + " (a checkpoint) nor " + kLatestFile +
                " (a folder of them) there" + (llvm::sys::fs::exists(path) ? "" : ": it does not exist"));
  return joinPath(path, newest);
}

llvm::Error agreeOnErrors(Communicator &world, llvm::Error err, llvm::StringRef what) {
  int64_t failed = err ? 1 : 0;
  if (auto cerr = world.allReduce(&failed, 1, DType::I64, Communicator::ReduceOp::Max)) {
    if (err)
      llvm::consumeError(std::move(cerr));
    return err ? std::move(err) : std::move(cerr);
  }
  if (err)
    return err;
  return failed ? fail("another rank failed to " + what + " (its error says why)") : llvm::Error::success();
}

// --- durable files -----------------------------------------------------------

llvm::Expected<DurableFile> DurableFile::create(const std::string &path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0)
    return fail(path + ": " + std::strerror(errno));
  return DurableFile(path, fd);
}

DurableFile::~DurableFile() {
  if (fd_ >= 0)
    ::close(fd_);
}

llvm::Error DurableFile::write(const void *data, size_t bytes) {
  const auto *p = static_cast<const char *>(data);
  while (bytes > 0) {
    ssize_t n = ::write(fd_, p, bytes);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return fail(path_ + ": " + std::strerror(n < 0 ? errno : ENOSPC));
    p += n;
    bytes -= static_cast<size_t>(n);
    offset_ += static_cast<uint64_t>(n);
  }
  return llvm::Error::success();
}

llvm::Error DurableFile::close() {
  int fd = fd_;
  fd_ = -1;
  if (::fsync(fd) != 0) {
    int e = errno;
    ::close(fd);
    return fail(path_ + ": cannot flush it to disk: " + std::strerror(e));
  }
  if (::close(fd) != 0)
    return fail(path_ + ": " + std::strerror(errno));
  return llvm::Error::success();
}

llvm::Error writeFileDurably(const std::string &path, llvm::StringRef text) {
  auto f = DurableFile::create(path);
  if (!f)
    return f.takeError();
  if (auto err = f->write(text.data(), text.size()))
    return err;
  return f->close();
}

llvm::Error syncFolder(const std::string &dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return fail(dir + ": " + std::strerror(errno));
  int rc = ::fsync(fd), e = errno;
  ::close(fd);
  return rc == 0 ? llvm::Error::success() : fail(dir + ": cannot flush the folder: " + std::strerror(e));
}

llvm::Error readAt(const std::string &path, uint64_t offset, void *out, size_t bytes) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return fail(path + ": " + std::strerror(errno));
  auto *p = static_cast<char *>(out);
  while (bytes > 0) {
    ssize_t n = ::pread(fd, p, bytes, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      int e = errno;
      ::close(fd);
      return fail(path + ": " + (n == 0 ? std::string("shorter than the index says (truncated?)") : std::strerror(e)));
    }
    p += n;
    offset += static_cast<uint64_t>(n);
    bytes -= static_cast<size_t>(n);
  }
  ::close(fd);
  return llvm::Error::success();
}

} // namespace partita::rt
