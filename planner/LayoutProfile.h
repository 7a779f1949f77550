//===- LayoutProfile.h - a layout compiled: each pipeline rank's costs ----===//
//
// profileLayout compiles a layout with compileModel and localizes its
// programs in memory (localizePrograms: nothing is written), sizes every rank
// with MemoryPredictor (what `inspect` prints of the written plan) and times
// every program with programTime. What it keeps per pipeline rank is all
// predict() needs: so a layout's dp and ZeRO
// variants can be predicted from the profile of its class (dp 1) too, the
// data-parallel collectives and ZeRO's partitions then added by formula.
//===----------------------------------------------------------------------===//
#pragma once
#include "compiler/ir/Graph.h"
#include "planner/Layout.h"
#include "planner/Machine.h"
#include "planner/ProgramTime.h"
#include "llvm/Support/Error.h"
#include <string>
#include <vector>

namespace partita::planner {

struct StageProfile {
  std::vector<ProgramTime> forward, backward; // per model chunk
  ProgramTime tail;                           // the step, every chunk's, and grad_norm when it runs
  rt::MemoryLedger::Bytes memory{};           // the fullest rank on this stage
  size_t peak = 0;
  int64_t rank = 0;                           // that rank
  double gradientBytes = 0;                   // the gradients the step reads (its part under ZeRO 2+)
  double gradientElements = 0;                // their elements
  double parameterBytes = 0;                  // the trained parameters it holds
  double stateBytes = 0;                      // AdamW's moments and fp32 masters
};

struct LayoutProfile {
  Layout layout;
  std::vector<StageProfile> stages; // per pipeline rank
  double forwardFlops = 0;          // one micro-batch's forward product FLOP, all ranks of a replica
  double productFlops = 0;          // one micro-batch's forward and backward product FLOP, same
  int64_t sequenceLength = 0;       // tokens per sequence
};

/// What the model is and where to compile: shared by every layout of a search.
struct ProfileContext {
  std::string model;
  std::vector<std::string> inputShapes; // compile --input-shape
  std::string scratch;                  // a folder this run owns (a copy of a model with inline weights)
  std::string sizingDevice = "cpu";     // whose kernels' workspace the memory counts
  const Machine *machine = nullptr;
  int devices = 1;
  bool clipping = false; // launch --clip-grad-norm: the grad_norm program runs (it does under fp16's loss scaling too)
  /// The inputs whose first dimension is the batch, with their shapes as
  /// compiled: a layout of another micro-batch size fixes them to it
  /// (--input-shape; the model's batch dimension must be dynamic).
  std::vector<std::pair<std::string, Shape>> batchInputs;
  int64_t modelBatch = 0;
};

/// Removes folder `path` (when set) however its scope ends: the planner's
/// scratch folders.
struct ScratchFolder {
  std::string path;
  ~ScratchFolder();
};

/// The mesh compile makes for `layout` (pp outermost, then dp, tp innermost).
Mesh layoutMesh(const Layout &layout);

/// The --input-shape flags that compile `layout`: the user's, and under
/// another micro-batch size than the model's, its batch inputs fixed to it.
std::vector<std::string> layoutInputShapes(const Layout &layout, const ProfileContext &ctx);

llvm::Expected<LayoutProfile> profileLayout(const Layout &layout, const ProfileContext &ctx);

/// The step time, throughput and memory of `layout` from `profile`, which is
/// its own (exact) or its class's (dp and ZeRO by formula).
Prediction predict(const Layout &layout, const LayoutProfile &profile, const ProfileContext &ctx,
                   double memoryCap, int64_t globalBatch);

} // namespace partita::planner
