//===- PipelineSchedule.cpp -----------------------------------------------===//
#include "runtime/schedule/PipelineSchedule.h"
#include <algorithm>

namespace partita::rt {

bool parsePipelineKind(llvm::StringRef name, PipelineKind &kind) {
  if (name == "gpipe")
    kind = PipelineKind::GPipe;
  else if (name == "1f1b")
    kind = PipelineKind::OneFOneB;
  else
    return false;
  return true;
}

std::vector<Action> PipelineSchedule::step() const {
  std::vector<Action> a;
  auto forward = [&](int64_t m) { a.push_back({Action::Kind::Forward, m}); };
  auto backward = [&](int64_t m) { a.push_back({Action::Kind::Backward, m, /*lastGradients=*/m + 1 == micro_}); };
  int64_t warmup = kind_ == PipelineKind::GPipe ? micro_ : std::min(stages_ - stage_ - 1, micro_);
  for (int64_t m = 0; m < warmup; ++m)
    forward(m);
  for (int64_t m = warmup; m < micro_; ++m) { // steady state: one forward, one backward
    forward(m);
    backward(m - warmup);
  }
  for (int64_t m = micro_ - warmup; m < micro_; ++m)
    backward(m);
  a.push_back({Action::Kind::ReduceGradients});
  a.push_back({Action::Kind::OptimizerStep});
  return a;
}

int64_t PipelineSchedule::maxInFlight() const {
  return kind_ == PipelineKind::GPipe ? micro_ : std::min(stages_ - stage_, micro_);
}

} // namespace partita::rt
