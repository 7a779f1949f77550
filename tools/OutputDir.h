//===- OutputDir.h - output folders that never lose a user's files -------===//
//
// The rule every Partita command that writes a folder follows: it deletes or
// overwrites only what it wrote itself.
//
//  * The output is written into a fresh staging folder beside the target
//    (DIR.partial-XXXXXX, created here, so never someone else's) and moved into
//    place only once it is complete; a failure removes the staging folder and
//    leaves an earlier output as it was.
//  * A finished output carries a manifest (partita-output.json: which command
//    wrote it and every file it wrote). An existing target is replaced only
//    when it is missing, an empty folder, or an output of the same command
//    whose every file its manifest lists; anything else is refused, naming the
//    folder or the first file Partita did not write.
//  * A target equal to, inside, or containing one of the command's inputs is
//    refused (replacing it would delete the input).
//===----------------------------------------------------------------------===//
#pragma once
#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"
#include <string>
#include <vector>

namespace partita {

/// The manifest's file name inside every output folder.
inline constexpr const char *kOutputManifest = "partita-output.json";

/// An absolute path without `.`/`..`, trailing slashes or (where it exists)
/// symbolic links, so that `out/`, `./out` and `out` compare equal.
std::string canonicalPath(llvm::StringRef path);

/// Checks that `dir` may become the output of command `kind` ("compile",
/// "launch", "run") given the paths the command reads. `flag` names the
/// option in errors (e.g. "-o").
llvm::Error checkOutputDir(llvm::StringRef dir, llvm::StringRef kind, llvm::StringRef flag,
                           llvm::ArrayRef<std::string> inputs);

/// A staging folder for `dir`: checked with checkOutputDir, then created
/// fresh beside it. Destroying an uncommitted one removes it.
class StagedOutput {
public:
  static llvm::Expected<StagedOutput> begin(llvm::StringRef dir, llvm::StringRef kind, llvm::StringRef flag,
                                            llvm::ArrayRef<std::string> inputs);
  StagedOutput(StagedOutput &&other) noexcept;
  StagedOutput &operator=(StagedOutput &&) = delete;
  ~StagedOutput();

  const std::string &path() const { return staging_; }
  /// Writes the manifest and replaces the target (re-checked first: the
  /// target may have changed while the command ran).
  llvm::Error commit();
  /// Removes the staging folder (also done by the destructor).
  void discard();

private:
  StagedOutput() = default;
  std::string target_, kind_, flag_, staging_;
  std::vector<std::string> inputs_;
  bool live_ = false; // staging_ exists and is ours to remove
};

} // namespace partita
