//===- LossLog.h - rank 0's progress line and loss.csv --------------------===//
//
// One line per step (or one redrawn progress bar) with the loss, throughput
// and elapsed time, and the same as a row of <out>/loss.csv.
//===----------------------------------------------------------------------===//
#pragma once
#include "compiler/support/OutputFile.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"
#include <memory>

namespace partita::rt {

class LossLog {
public:
  /// Creates `outDir` and outDir/loss.csv with its header.
  static llvm::Expected<LossLog> open(llvm::StringRef outDir, int steps, bool progressBar);
  /// Step `step`'s line and row; an error once loss.csv cannot be written
  /// (a full disk stops the run at that step, not hours later).
  llvm::Error record(int step, float loss, double tokensPerSecond, double elapsedSeconds);
  /// A step whose update was skipped: "step S/N" followed by `what`.
  void skipped(int step, llvm::StringRef what);
  /// Flushes and closes loss.csv. A log destroyed unfinished removes it.
  llvm::Error finish() { return csv_.commit(); }

private:
  LossLog(OutputFile csv, int steps, bool progressBar) : csv_(std::move(csv)), steps_(steps), progressBar_(progressBar) {}
  OutputFile csv_;
  int steps_;
  bool progressBar_;
};

} // namespace partita::rt
