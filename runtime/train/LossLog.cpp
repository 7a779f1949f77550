//===- LossLog.cpp --------------------------------------------------------===//
#include "runtime/train/LossLog.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/Path.h"
#include <algorithm>

namespace partita::rt {

llvm::Expected<LossLog> LossLog::open(llvm::StringRef outDir, int steps, bool progressBar) {
  auto failWith = [](const llvm::Twine &msg) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
  };
  if (auto ec = llvm::sys::fs::create_directories(outDir))
    return failWith("cannot create " + outDir + ": " + ec.message());
  llvm::SmallString<256> path(outDir);
  llvm::sys::path::append(path, "loss.csv");
  auto csv = OutputFile::create(path);
  if (!csv)
    return csv.takeError();
  csv->os() << "step,loss,tokens_per_s,elapsed_s\n";
  return LossLog(std::move(*csv), steps, progressBar);
}

llvm::Error LossLog::record(int s, float loss, double tps, double elapsed) {
  int steps = steps_;
  if (progressBar_) {
    int width = 30, done = static_cast<int>(width * s / std::max(1, steps));
    llvm::outs() << "\r[" << std::string(done, '#') << std::string(width - done, ' ') << "] "
                 << llvm::format("step %d/%d  loss %.4f  %.0f tokens/s  %.1f s", s, steps, loss, tps, elapsed)
                 << (s == steps ? "\n" : "");
  } else {
    llvm::outs() << llvm::format("step %d/%d  loss %.6f  %.0f tokens/s  %.2f s\n", s, steps, loss, tps, elapsed);
  }
  llvm::outs().flush();
  csv_.os() << s << "," << llvm::format("%.8f", loss) << "," << llvm::format("%.1f", tps) << ","
            << llvm::format("%.3f", elapsed) << "\n";
  csv_.os().flush(); // each step's row on disk as it ends (and a full disk found at once)
  return csv_.checkWrites();
}

void LossLog::skipped(int step, llvm::StringRef what) {
  llvm::outs() << "step " << step << "/" << steps_ << what << "\n";
}

} // namespace partita::rt
