//===- LossLog.h - rank 0's progress line and loss.csv --------------------===//
//
// One line per step (or one redrawn progress bar) with the loss, throughput
// and elapsed time, and the same as a row of <out>/loss.csv.
//===----------------------------------------------------------------------===//
#pragma once
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"
#include <memory>

namespace partita::rt {

class LossLog {
public:
  /// Creates `outDir` and outDir/loss.csv with its header.
  static llvm::Expected<LossLog> open(llvm::StringRef outDir, int steps, bool progressBar);
  /// Step `step`'s line and row.
  void record(int step, float loss, double tokensPerSecond, double elapsedSeconds);
  /// A step whose update was skipped: "step S/N" followed by `what`.
  void skipped(int step, llvm::StringRef what);

private:
  LossLog(std::unique_ptr<llvm::raw_fd_ostream> csv, int steps, bool progressBar)
      : csv_(std::move(csv)), steps_(steps), progressBar_(progressBar) {}
  std::unique_ptr<llvm::raw_fd_ostream> csv_;
  int steps_;
  bool progressBar_;
};

} // namespace partita::rt
