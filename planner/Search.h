//===- Search.h - partita plan's search over layouts ----------------------===//
//
// A layout's class is what it compiles to without ZeRO and the schedule:
// (tp, sequence parallelism, pp, virtual stages, recompute, precision,
// micro-batch size); dp is what the devices leave. The search
//   1. lists the classes, drops those whose weights alone cannot fit a device
//      (parameters x their bytes / (tp x pp), or / devices where ZeRO-3 may
//      partition them), and orders the
//      rest by a rough step time (Megatron's back-of-the-envelope: 6 P T / N
//      FLOP per device, the bubble, tp's and dp's all-reduces on their links);
//   2. compiles the classes in that order (profileLayout, dp 1) until the
//      time budget is spent, and predicts each ZeRO stage and schedule of
//      each from its class (ZeRO by formula). A class is skipped when a
//      floor under its memory cannot fit: every model state partitioned as
//      ZeRO-3 would, plus Korthikanti et al.'s activation formula scaled by
//      the least the compiled classes of its recompute mode, tp and
//      precision exceeded it. A class none of whose layouts fits is followed
//      by the classes that trade only memory: with sequence parallelism
//      (tp > 1; it moves the same bytes), and with one layer moved from its
//      fullest pipeline stage to its emptiest (--pp-layers), and so on;
//   3. compiles the best predicted layouts that fit exactly, with their own
//      dp and ZeRO, and predicts them again from their own programs, until
//      the top K are all exact and fit.
// Nothing is estimated in the final table: its times and memory come from
// the layouts' own compiled programs.
//===----------------------------------------------------------------------===//
#pragma once
#include "planner/LayoutProfile.h"
#include <functional>

namespace partita::planner {

struct SearchOptions {
  int devices = 1;
  double memoryCap = 0;     // bytes per device
  int64_t globalBatch = 0;  // sequences per step (0: the micro-batch size x devices)
  int top = 5;
  double budgetSeconds = 60; // for step 2
  int maxTp = 0;             // 0: the devices of a node
  std::vector<std::string> precisions{"bf16"}, recomputes{"none", "selective", "full"};
  std::vector<std::string> schedules{"1f1b", "gpipe"};
  std::vector<int64_t> microBatchSizes; // empty: the model's
  std::vector<int> zeroStages{0, 1, 2, 3};
  std::vector<int> tps, pps, virtualStages; // empty: every one that divides (virtual stages: 1..maxVirtualStages)
  std::vector<bool> sequenceParallel{false, true}; // Megatron's sequence parallelism (tp > 1 only)
  int maxVirtualStages = 4;
  /// Called with a line of progress ("compiled tp2 pp1 ...: 1.2 s").
  std::function<void(const std::string &)> progress;
};

struct SearchResult {
  std::vector<Prediction> ranked;   // fit, fastest first (the first `top` exact)
  std::vector<Prediction> rejected; // do not fit, fastest first
  std::vector<std::pair<Layout, std::string>> failed; // classes that do not compile, and why
  int classes = 0, profiled = 0, skippedForMemory = 0, unexplored = 0, compiles = 0;
  int skippedForBatch = 0; // (tp, pp, micro-batch size) whose dp does not divide the global batch
  int zeroWithoutDp = 0;   // layouts of dp 1 at a ZeRO stage above 0 (nothing to partition): not formed
  double seconds = 0;
  int64_t globalBatch = 0;
  ProfileContext context; // as the layouts were compiled (the model's batch inputs; layoutInputShapes)
};

llvm::Expected<SearchResult> searchLayouts(const ProfileContext &ctx, const SearchOptions &options);

} // namespace partita::planner
