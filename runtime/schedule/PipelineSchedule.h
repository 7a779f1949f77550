//===- PipelineSchedule.h - GPipe and 1F1B on one pipeline stage -----------===//
//
// What stage s of p runs in one training step of m micro-batches (each
// forward receives from the stage before and sends to the one after; each
// backward the other way round):
//   GPipe: every forward, then every backward (m micro-batches' activations
//          stashed at once);
//   1F1B:  min(p - s - 1, m) forwards to warm up, then one forward and one
//          backward in turn, then the backwards left (at most p - s
//          micro-batches stashed: PipeDream-flush, Megatron's default).
// Both run the backwards in micro-batch order, then reduce the gradients and
// step. A stage's bubble is (p - 1) / (m + p - 1) of the step in either.
//===----------------------------------------------------------------------===//
#pragma once
#include "runtime/schedule/Schedule.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

namespace partita::rt {

enum class PipelineKind { GPipe, OneFOneB };

/// "gpipe", "1f1b" or "interleaved" (1F1B over V > 1 model chunks per rank);
/// false for anything else.
bool parsePipelineKind(llvm::StringRef name, PipelineKind &kind);
/// Whether schedule `name` runs a plan of `virtualStages` model chunks per
/// rank: interleaved needs V > 1 (compile --virtual-stages), and V > 1 runs
/// only interleaved 1F1B, which "1f1b" names too. The error names the flag.
llvm::Error checkPipelineSchedule(llvm::StringRef name, int64_t virtualStages);
/// Whether `microBatches` (the flag's value) runs on `stages` pipeline
/// stages with `virtualStages` model chunks each: at least 1, and under
/// interleaved 1F1B a multiple of the stages. Launch and inspect both ask.
llvm::Error checkMicroBatches(int64_t microBatches, int64_t stages, int64_t virtualStages);

class PipelineSchedule final : public Schedule {
public:
  PipelineSchedule(PipelineKind kind, int64_t stages, int64_t stage, int64_t microBatches)
      : kind_(kind), stages_(stages < 1 ? 1 : stages), stage_(stage), micro_(microBatches < 1 ? 1 : microBatches) {}
  std::vector<Action> step() const override;
  /// The most micro-batches whose activations this stage holds at once.
  int64_t maxInFlight() const;

private:
  PipelineKind kind_;
  int64_t stages_, stage_, micro_;
};

/// Interleaved 1F1B (Megatron's): rank s holds V model chunks (stages s,
/// s + p, ...); forwards go through the chunks p micro-batches at a time,
/// chunk 0 first, backwards through them from the last; (p - s - 1) x 2 +
/// (V - 1) x p forwards warm up. m must be a multiple of p. The bubble is
/// (p - 1) / (V x m + p - 1) of the step.
class InterleavedSchedule final : public Schedule {
public:
  InterleavedSchedule(int64_t stages, int64_t stage, int64_t chunks, int64_t microBatches)
      : stages_(stages), stage_(stage), chunks_(chunks), micro_(microBatches) {}
  std::vector<Action> step() const override;

private:
  int64_t stages_, stage_, chunks_, micro_;
};

} // namespace partita::rt
