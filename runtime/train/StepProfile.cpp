//===- StepProfile.cpp ----------------------------------------------------===//
#include "runtime/train/StepProfile.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"
#include <algorithm>

namespace partita::rt {

void StepProfile::beginStep(int step) {
  step_ = step;
  mark_ = std::chrono::steady_clock::now();
}

void StepProfile::phase(llvm::StringRef name) {
  auto now = std::chrono::steady_clock::now();
  if (on_ && step_ > 1) // the first step includes one-time set-up
    phases_[name.str()] += std::chrono::duration<double, std::milli>(now - mark_).count();
  mark_ = now;
}

void StepProfile::print(llvm::raw_ostream &os, int steps,
                        llvm::ArrayRef<std::pair<const char *, const Program *>> programs, bool byNode) const {
  double n = steps - 1;
  os << "profile, mean per step over steps 2.." << steps << ":\n";
  for (const auto &[name, ms] : phases_)
    os << llvm::format("%10.2f ms  ", ms / n) << name << "\n";
  for (const auto &[label, prog] : programs) {
    std::vector<std::pair<double, std::string>> rows;
    for (const auto &[op, entry] : prog->profile())
      rows.push_back({entry.first / n, op + " x" + std::to_string(static_cast<int>(entry.second / n))});
    std::sort(rows.rbegin(), rows.rend());
    os << label << (byNode ? " by node:\n" : " by op type:\n");
    for (const auto &[ms, op] : rows)
      os << llvm::format("%10.2f ms  ", ms) << op << "\n";
  }
}

} // namespace partita::rt
