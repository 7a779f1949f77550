//===- TraceLog.h - a Chrome/Perfetto trace of what each rank did ---------===//
//
// `launch --trace FILE`: each rank records a slice per thing it does in a
// step (a micro-batch's forward or backward, a pipeline receive or send, the
// gradient flush, the optimizer step), on the machine's monotonic clock, and
// writes them beside FILE (FILE.rank<k>); rank 0 joins the parts into FILE,
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
  /// Writes this rank's part, FILE.rank<rank>: its track named `track`
  /// (thread id `rank`) and its collectives' ("`track` collectives", thread
  /// id kCollectiveTrack + rank).
  llvm::Error writePart(llvm::StringRef file, int rank, llvm::StringRef track) const;

private:
  struct Slice {
    std::string name, cat;
    double startUs, durUs;
    bool collective = false;
  };
  bool on_;
  std::vector<Slice> slices_;
};

/// Joins FILE.rank0 .. FILE.rank<ranks-1> into FILE and removes the parts.
llvm::Error joinTrace(llvm::StringRef file, int ranks);

} // namespace partita::rt
