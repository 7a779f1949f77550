//===- Layout.h - one parallel layout partita plan considers --------------===//
#pragma once
#include "runtime/core/MemoryLedger.h"
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace partita::planner {

struct Layout {
  int tp = 1, pp = 1, dp = 1, virtualStages = 1, zero = 0;
  bool sequenceParallel = false;
  std::string schedule = "1f1b";   // gpipe, 1f1b, interleaved (pp > 1)
  std::string recompute = "none";  // none, selective, full
  std::string precision = "bf16";  // fp32, bf16, fp16
  int64_t microBatches = 1;        // per replica per step (launch --micro-batches)
  int64_t microBatchSize = 1;      // sequences per micro-batch (the compiled batch)
  /// Layers per pipeline stage (compile --pp-layers); empty: compile's own
  /// cut, balanced by the stages' time.
  std::vector<int> stageLayers;

  /// "tp2 pp2 v2 dp4 zero1 interleaved recompute=full bf16 m=8 mbs=1"
  /// (" layers=3,5" after pp's size when the cut is given).
  std::string str() const;
  /// The flags of `partita compile` for it (not the model and -o).
  std::string compileFlags() const;
  /// The flags of `partita launch` it needs beyond the compiled plan.
  std::string launchFlags() const;
  /// What it compiles to without dp (the class its dp and ZeRO variants share).
  Layout compileClass() const;
};

/// Where a layout's time goes, per step (seconds).
struct TimeBreakdown {
  double compute = 0;     // the busiest rank's kernels
  double tensorComm = 0;  // tp collectives on it
  double dataComm = 0;    // dp collectives left exposed (reductions, ZeRO gathers)
  double bubble = 0;      // pipeline idle on the busiest rank
  double tail = 0;        // grad_norm and the optimizer step
};

struct Prediction {
  Layout layout;
  std::string error;      // it does not compile (why), or is refused
  double stepSeconds = 0;
  double tokensPerSecond = 0;
  double mfu = 0;         // model FLOP (3x the forward's, no recompute) / (time x devices x peak)
  double deviceTflops = 0; // product FLOP run, recompute included, per device per second (Megatron's count)
  TimeBreakdown time;
  /// The busiest rank's kernel seconds by op type: per micro-batch in its
  /// forwards and backwards (every chunk), once in its grad_norm and step.
  std::map<std::string, double> forwardByOp, backwardByOp, tailByOp;
  rt::MemoryLedger::Bytes memory{}; // the fullest rank's, by category
  size_t peak = 0;
  int64_t peakRank = 0;
  int64_t busiestStage = 0; // the pipeline rank whose work (time) is the most
  bool memoryExact = false; // from this layout's own compiled programs (else from its class's, ZeRO by formula)
  bool fits = false;
  std::string doesNotFit;   // the category that breaks the cap
};

} // namespace partita::planner
