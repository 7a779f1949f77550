//===- OutputFile.cpp -----------------------------------------------------===//
#include "compiler/support/OutputFile.h"
#include "llvm/Support/FileSystem.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/message_lite.h"
#include <unistd.h>

namespace fs = llvm::sys::fs;

namespace partita {

llvm::Error OutputFile::failure(const llvm::Twine &what, std::error_code ec) {
  abandon();
  return llvm::createStringError(ec, "cannot " + what + " " + path_ + ": " + ec.message());
}

llvm::Expected<OutputFile> OutputFile::create(llvm::StringRef path, Mode mode) {
  OutputFile f;
  f.path_ = path.str();
  f.mode_ = mode;
  std::error_code ec;
  if (mode == Mode::InPlace) {
    f.writing_ = f.path_;
    f.os_ = std::make_unique<llvm::raw_fd_ostream>(f.path_, ec);
  } else {
    int fd = -1;
    llvm::SmallString<256> tmp;
    ec = fs::createUniqueFile(path + ".partial-%%%%%%", fd, tmp);
    if (!ec) {
      f.writing_ = tmp.str().str();
      f.os_ = std::make_unique<llvm::raw_fd_ostream>(fd, /*shouldClose=*/true);
    }
  }
  if (ec) {
    f.os_.reset(); // never opened: nothing to close
    return llvm::createStringError(ec, "cannot write " + f.path_ + ": " + ec.message());
  }
  f.live_ = true;
  return std::move(f);
}

OutputFile::OutputFile(OutputFile &&o) noexcept
    : path_(std::move(o.path_)), writing_(std::move(o.writing_)), mode_(o.mode_), os_(std::move(o.os_)),
      live_(o.live_) {
  o.live_ = false;
}

OutputFile::~OutputFile() { abandon(); }

void OutputFile::abandon() {
  if (os_) {
    os_->clear_error();
    os_->close();
    os_->clear_error(); // its close may fail too: the file goes anyway
    os_.reset();
  }
  if (live_)
    fs::remove(writing_);
  live_ = false;
}

llvm::Error OutputFile::checkWrites() {
  if (os_ && os_->has_error())
    return failure("write", os_->error());
  return llvm::Error::success();
}

llvm::Error OutputFile::close() {
  if (!os_)
    return llvm::Error::success();
  os_->close(); // flushes: a full disk often shows here first
  std::error_code ec = os_->error();
  os_->clear_error();
  os_.reset(); // closed either way: abandon() must not close it twice
  return ec ? failure("write", ec) : llvm::Error::success();
}

llvm::Error OutputFile::commit() {
  if (!live_)
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "internal: " + path_ + " committed twice");
  if (auto err = close())
    return err;
  if (mode_ == Mode::Replace) {
    if (std::error_code ec = fs::rename(writing_, path_))
      return failure("move the finished file into", ec);
  } else if (mode_ == Mode::NoReplace) {
    // link(2) fails if the name exists: a file that appeared since the
    // command checked is not Partita's to replace.
    if (::link(writing_.c_str(), path_.c_str()) != 0) {
      std::error_code ec(errno, std::generic_category());
      return failure(ec == std::errc::file_exists ? "replace (it appeared while Partita wrote it; left as it is)"
                                                  : "move the finished file into",
                     ec);
    }
    fs::remove(writing_);
  }
  live_ = false;
  return llvm::Error::success();
}

llvm::Error writeFile(llvm::StringRef path, llvm::function_ref<void(llvm::raw_ostream &)> write,
                      OutputFile::Mode mode) {
  auto file = OutputFile::create(path, mode);
  if (!file)
    return file.takeError();
  write(file->os());
  return file->commit();
}

namespace {
/// Protobuf's output, chunk by chunk, into a raw_ostream.
class RawOstreamSink final : public google::protobuf::io::CopyingOutputStream {
public:
  explicit RawOstreamSink(llvm::raw_fd_ostream &os) : os_(os) {}
  bool Write(const void *buffer, int size) override {
    os_.write(static_cast<const char *>(buffer), static_cast<size_t>(size));
    return !os_.has_error();
  }

private:
  llvm::raw_fd_ostream &os_;
};
} // namespace

llvm::Error writeMessage(OutputFile &out, const google::protobuf::MessageLite &message) {
  RawOstreamSink sink(out.os());
  bool ok;
  {
    google::protobuf::io::CopyingOutputStreamAdaptor stream(&sink);
    ok = message.SerializeToZeroCopyStream(&stream);
    ok = stream.Flush() && ok;
  }
  if (auto err = out.checkWrites())
    return err;
  if (!ok)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "cannot write " + out.path() + ": the message does not serialise (over 2 GB?)");
  return llvm::Error::success();
}

} // namespace partita
