//===- TraceLog.h - a Chrome/Perfetto trace of what each rank did ---------===//
//
// `launch --trace FILE`: each rank records a slice per thing it does in a
// step (a micro-batch's forward or backward, a pipeline receive or send, the
// gradient flush, the optimizer step), on the machine's monotonic clock, and
// writes them into a parts folder inside the launch's staging folder (which
// Partita made: nothing of the user's is overwritten); rank 0 joins the
// parts into FILE (never replacing a file that exists) and removes them,
// Chrome's trace-event format (chrome://tracing, ui.perfetto.dev), one track
// per rank, and a second per rank with the collectives its programs ran (the
// communication stream). Idle time is the gaps: the pipeline's bubble.
//===----------------------------------------------------------------------===//
#pragma once
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include <chrono>
#include <string>
#include <vector>

namespace partita::rt {

class TraceLog {
public:
  using Clock = std::chrono::steady_clock;
  static constexpr int kCollectiveTrack = 1000;
  /// `on` false: records nothing.
  explicit TraceLog(bool on) : on_(on) {}
  bool on() const { return on_; }
  /// A slice `name` (micro >= 0: " <micro>" appended) of category `cat`.
  void slice(llvm::StringRef name, int64_t micro, llvm::StringRef cat, Clock::time_point start, Clock::time_point end);
  /// A collective a program ran, on the rank's second track (its
  /// communication stream: an async one spans from its start to its finish,
  /// over the compute it overlaps).
  void collective(llvm::StringRef name, Clock::time_point start, Clock::time_point end);
  /// Writes this rank's part into `partsDir` (tracePartsDir): its track
  /// named `track` (thread id `rank`) and its collectives' ("`track`
  /// collectives", thread id kCollectiveTrack + rank).
  llvm::Error writePart(llvm::StringRef partsDir, int rank, llvm::StringRef track) const;

private:
  struct Slice {
    std::string name, cat;
    double startUs, durUs;
    bool collective = false;
  };
  bool on_;
  std::vector<Slice> slices_;
};

/// The folder the ranks write their parts into, inside `stagingDir` (the
/// launch's staging folder, which Partita created).
std::string tracePartsDir(llvm::StringRef stagingDir);

/// Joins the parts of ranks 0 .. ranks-1 into `file`, which must not exist
/// (one that appeared meanwhile is left alone and the join fails), then
/// removes `partsDir`.
llvm::Error joinTrace(llvm::StringRef partsDir, int ranks, llvm::StringRef file);

} // namespace partita::rt
