//===- Compile.h - compile as a library -----------------------------------===//
//
// compileModel runs what `partita compile` does up to the files: import the
// ONNX model, run the pass pipelines the options call for (canonicalize, tie
// embeddings, classify parameters, autodiff and the optimizer, annotate and
// propagate tensor parallelism, data parallelism and ZeRO), then cut the
// global graph into pipeline stages and each stage into its programs. It
// keeps no state between calls: one process may compile many layouts (the
// planner does). localizePrograms then makes each rank's programs
// (ranks that would get the same programs share one copy), and
// writeCompiledPlan writes them, the global IR and plan.json into a folder.
//===----------------------------------------------------------------------===//
#pragma once
#include "compiler/ir/Graph.h"
#include "compiler/plan/Plan.h"
#include "driver/CompileOptions.h"
#include "passes/ClassifyParameters.h"
#include "passes/SplitPrograms.h"
#include "llvm/Support/Error.h"
#include <memory>

namespace partita {

struct CompiledPlan {
  CompileOptions options;
  /// The sharded global graph (out/global.pir), before the splits.
  std::unique_ptr<Graph> global;
  /// The global graph before ZeRO-3 or a master copy partitioned its weights
  /// (what the parameters' records describe); null when the same as global.
  std::unique_ptr<Graph> unpartitioned;
  /// Each pipeline stage's programs, in stage order (one entry without a
  /// pipeline; pp x virtual stages with one).
  std::vector<ProgramSplit> stages;
  /// The plan, but for what writing adds: the ranks' program files and their
  /// hashes, the trained parameters' records and the model's weight files.
  Plan plan;
  /// The model's initializers, trainable or frozen and why (training).
  std::vector<ParameterClass> initializers;
};

/// Compiles `options.model`; an error names the flag, node, value or file.
llvm::Expected<CompiledPlan> compileModel(const CompileOptions &options);

/// One rank's program after localize (passes/Localize.cpp): what
/// writeCompiledPlan writes at `rel` in the plan's folder.
struct LocalProgram {
  std::string rel;       // "rank3/backward.onnx"
  std::string name;      // its name in the rank's entry (chunkProgram's: "backward.1" for a second chunk)
  std::string base;      // the program it is (forward, backward, step, ...)
  int64_t chunk = 0;     // the model chunk (virtual stage) of the rank it belongs to
  size_t rankIndex = 0;  // the first rank that runs it (plan.ranks' index; its folder)
  std::unique_ptr<Graph> graph;
};

struct LocalPlan {
  std::vector<LocalProgram> programs;
  std::vector<size_t> runsProgramsOf; // per rank: the rank (index) whose programs it runs (itself when its own)
};

/// Localizes each rank's programs, once per set of ranks that run the same
/// ones, and fills compiled.plan but for the files' hashes: the ranks'
/// program entries, their inputs and outputs, the parameters' records and
/// the model's weight files. The planner sizes these in memory;
/// writeCompiledPlan writes them. Once per CompiledPlan (it adds to the
/// plan's parameter records and weight files).
llvm::Expected<LocalPlan> localizePrograms(CompiledPlan &compiled);

/// Writes `compiled` into folder `dir` (created; the caller stages it): each
/// rank's programs as ONNX and IR, global.pir and plan.json.
llvm::Error writeCompiledPlan(CompiledPlan &compiled, llvm::StringRef dir);

} // namespace partita
