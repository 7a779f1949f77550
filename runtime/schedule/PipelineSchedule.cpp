//===- PipelineSchedule.cpp -----------------------------------------------===//
#include "runtime/schedule/PipelineSchedule.h"
#include <algorithm>

namespace partita::rt {

bool parsePipelineKind(llvm::StringRef name, PipelineKind &kind) {
  if (name == "gpipe")
    kind = PipelineKind::GPipe;
  else if (name == "1f1b" || name == "interleaved")
    kind = PipelineKind::OneFOneB;
  else
    return false;
  return true;
}

llvm::Error checkPipelineSchedule(llvm::StringRef name, int64_t virtualStages) {
  auto fail = [&](const llvm::Twine &why) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "--schedule " + name + ": " + why);
  };
  if (PipelineKind kind; !parsePipelineKind(name, kind))
    return fail("pipeline schedules are gpipe, 1f1b and interleaved");
  if (name == "interleaved" && virtualStages < 2)
    return fail("the plan has one model chunk per rank; interleaved 1F1B needs several (compile with "
                "--virtual-stages V, V > 1)");
  if (name == "gpipe" && virtualStages > 1)
    return fail("the plan has " + llvm::Twine(virtualStages) +
                " model chunks per rank, which only interleaved 1F1B runs (--schedule interleaved or 1f1b)");
  return llvm::Error::success();
}

llvm::Error checkMicroBatches(int64_t m, int64_t stages, int64_t virtualStages) {
  auto fail = [&](const llvm::Twine &why) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "--micro-batches " + llvm::Twine(m) + ": " + why);
  };
  if (m < 1)
    return fail("must be >= 1");
  if (virtualStages > 1 && m % stages != 0)
    return fail("interleaved 1F1B (" + llvm::Twine(virtualStages) + " model chunks per rank) runs micro-batches " +
                llvm::Twine(stages) + " at a time, one per stage: give a multiple of " + llvm::Twine(stages));
  return llvm::Error::success();
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

std::vector<Action> InterleavedSchedule::step() const {
  const int64_t p = stages_, total = micro_ * chunks_;
  // The k-th forward (backward) of the rank: its micro-batch and chunk.
  auto micro = [&](int64_t k) { return (k / (p * chunks_)) * p + k % p; };
  auto chunk = [&](int64_t k, bool forward) {
    int64_t c = (k % (p * chunks_)) / p;
    return forward ? c : chunks_ - 1 - c;
  };
  int64_t warmup = micro_ == p ? total : std::min((p - stage_ - 1) * 2 + (chunks_ - 1) * p, total);
  std::vector<Action> a;
  auto forward = [&](int64_t k) {
    Action f{Action::Kind::Forward, micro(k)};
    f.chunk = chunk(k, true);
    a.push_back(f);
  };
  auto backward = [&](int64_t k) {
    Action b{Action::Kind::Backward, micro(k), /*lastGradients=*/micro(k) + 1 == micro_};
    b.chunk = chunk(k, false);
    a.push_back(b);
  };
  for (int64_t k = 0; k < warmup; ++k)
    forward(k);
  for (int64_t k = warmup; k < total; ++k) {
    forward(k);
    backward(k - warmup);
  }
  for (int64_t k = total - warmup; k < total; ++k)
    backward(k);
  a.push_back({Action::Kind::ReduceGradients});
  a.push_back({Action::Kind::OptimizerStep});
  return a;
}

int64_t PipelineSchedule::maxInFlight() const {
  return kind_ == PipelineKind::GPipe ? micro_ : std::min(stages_ - stage_, micro_);
}

} // namespace partita::rt
