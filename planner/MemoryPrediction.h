//===- MemoryPrediction.h - what each rank of a written plan will hold ----===//
//
// The per-rank memory `inspect` prints and `plan` ranks layouts by: every
// distinct program of a plan folder is imported (weights by reference,
// never read), or taken as compiled in memory (the planner's), and loaded
// on a sizing device that allocates nothing, so its arena, outputs, weights
// and kernels' workspace come from the same code that sizes them at launch. A rank's programs share one arena (the
// largest); everything is made by the end of the first step and kept, so
// the peak is the sum of the categories the runtime's MemoryLedger counts
// (launch --memory), plus, under a pipeline, the buffers of the
// micro-batches in flight (the schedule's own count).
//===----------------------------------------------------------------------===//
#pragma once
#include "compiler/ir/Graph.h"
#include "compiler/plan/Plan.h"
#include "runtime/core/Device.h"
#include "runtime/core/DeviceRegistry.h"
#include "runtime/core/MemoryLedger.h"
#include "llvm/Support/Error.h"
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace partita {

/// What one program costs (dp replicas share a program, sized once), or a
/// rank's programs summed.
struct ProgramSizes {
  double weights = 0, arena = 0, outputs = 0, comm = 0, params = 0, grads = 0, moments = 0, masters = 0,
         gradSums = 0;
  int collectives = 0;
  double kernels[rt::kMemoryCategories] = {}; // bytes the kernels keep, by category
  double scratch[rt::kMemoryCategories] = {}; // the kernels' scratch regions (shared by a rank's programs)
  double summedInside = 0;  // float32 sums of the gradient outputs whose reduce-scatter sums the micro-batches (ZeRO-1)
  double deferredSums = 0;  // what those reduce-scatters keep for it (Program::deferredSumBytes)
  double sends = 0;         // partita.Send bytes per run (pipeline edges)
  std::set<int64_t> sendTo; // their stages
  std::vector<std::string> lines; // one per collective: op, operand, MB, value, axis
};

/// One printed rank: it stands for the ranks in `others` too (same programs).
struct RankMemory {
  const RankPlan *rank = nullptr;
  ProgramSizes sizes;
  rt::MemoryLedger::Bytes bytes{}; // by the ledger's categories
  size_t peak = 0;                 // their sum
  size_t sendCopies = 0;           // pipeline send copies' bound (beside the peak)
  double sharedGradients = 0;      // of which a shared weight's gradient, sent once a step
  std::vector<int64_t> others;
};

struct MemoryPredictionOptions {
  std::string dir;         // the plan folder
  /// The programs in memory by file (localizePrograms'), read instead of
  /// the folder's: the planner sizes layouts it never writes.
  const std::map<std::string, const Graph *> *programs = nullptr;
  rt::DeviceType device = rt::DeviceType(rt::kDefaultDevice);
  int microBatches = 1;    // launch --micro-batches
  std::string schedule = "1f1b";
  int onlyRank = -1;       // >= 0: that rank only
  /// launch --offload-optimizer: the step programs, their masters and the
  /// moments are host memory, not the device's (OptimizerOffload.h).
  bool offloadOptimizer = false;
};

/// Bytes one rank sends per step for a collective node of a local program
/// (ring algorithms, as nccl-tests count them: all-reduce 2(n-1)/n of the
/// buffer, all-gather and reduce-scatter (n-1)/n of the full buffer).
double collectiveBytes(const Node &n);

class MemoryPredictor {
public:
  MemoryPredictor(const Plan &plan, MemoryPredictionOptions options) : plan_(plan), o_(std::move(options)) {}
  /// Each distinct rank's prediction, in rank order.
  llvm::Expected<std::vector<RankMemory>> predict();
  /// A program file's imported (local) graph, once predict() loaded it.
  const Graph *program(const std::string &rel) const;

private:
  llvm::Expected<const ProgramSizes *> sizeOf(const std::string &rel);
  double inFlightBytes(const RankPlan &r) const;

  const Plan &plan_;
  MemoryPredictionOptions o_;
  std::map<std::string, ProgramSizes> sized_;
  std::map<std::string, std::unique_ptr<Graph>> graphs_;
};

} // namespace partita
