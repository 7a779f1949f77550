//===- OutputFile.h - files written without losing a failure's reason ----===//
//
// Every file Partita writes goes through OutputFile. A failure anywhere (the
// create, a write on a full disk, the final flush or close) becomes an
// llvm::Error naming the file and the system's reason ("No space left on
// device"), and the half-written file is removed. A raw_fd_ostream destroyed
// with an unchecked error would abort instead ("LLVM ERROR: IO failure on
// output stream"), and a checked one that drops error() loses the reason.
//
// Three ways to put the file in place:
//  * InPlace: writes `path` itself. For files inside a staging folder Partita
//    made (tools/OutputDir.h), which is moved into place as a whole.
//  * Replace: writes a temporary file beside `path` (path.partial-XXXXXX) and
//    renames it over `path` on commit: readers see the old file or the new.
//  * NoReplace: as Replace, but the file is linked into place only if `path`
//    does not exist at that moment; one that appeared meanwhile (someone
//    else's) is never overwritten.
//===----------------------------------------------------------------------===//
#pragma once
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"
#include <memory>
#include <string>

namespace google::protobuf {
class MessageLite;
}

namespace partita {

class OutputFile {
public:
  enum class Mode { InPlace, Replace, NoReplace };

  static llvm::Expected<OutputFile> create(llvm::StringRef path, Mode mode = Mode::InPlace);
  OutputFile(OutputFile &&other) noexcept;
  OutputFile &operator=(OutputFile &&) = delete;
  /// An uncommitted file is removed (the temporary one, or `path` in place).
  ~OutputFile();

  const std::string &path() const { return path_; }
  llvm::raw_fd_ostream &os() { return *os_; }
  /// The first write error so far, naming the file: for long writers, to stop
  /// at the first failed chunk instead of writing the rest into the void.
  llvm::Error checkWrites();
  /// Flushes and closes, checking both: every byte is written. The file is
  /// not in place yet (for two files that go into place together).
  llvm::Error close();
  /// Closes (if not yet), then puts the file in place.
  llvm::Error commit();

private:
  OutputFile() = default;
  llvm::Error failure(const llvm::Twine &what, std::error_code ec);
  void abandon();

  std::string path_, writing_; // writing_: where the bytes go (path_, or the temporary file)
  Mode mode_ = Mode::InPlace;
  std::unique_ptr<llvm::raw_fd_ostream> os_;
  bool live_ = false; // writing_ exists and is ours to remove
};

/// Creates, fills (by `write`) and commits one file.
llvm::Error writeFile(llvm::StringRef path, llvm::function_ref<void(llvm::raw_ostream &)> write,
                      OutputFile::Mode mode = OutputFile::Mode::InPlace);

/// Serialises `message` into `out` as it goes (no second copy in memory).
llvm::Error writeMessage(OutputFile &out, const google::protobuf::MessageLite &message);

} // namespace partita
