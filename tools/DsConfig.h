//===- DsConfig.h - a DeepSpeed config file as compile / launch flags -----===//
//
// `partita compile --ds-config ds_config.json` and `partita launch
// --ds-config ds_config.json` read the DeepSpeed config a DeepSpeed user
// already has and set the flags its keys map to (README, "--ds-config").
// Each command reads only its own keys and warns once for each of its keys
// Partita ignores; a key whose omission would change the math (fp16, an
// optimizer or schedule Partita does not have) is an error naming it. A flag
// given on the command line overrides the file.
//===----------------------------------------------------------------------===//
#pragma once
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Error.h"
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace partita {
struct Plan;
namespace rt {
struct TrainOptions;
}

enum class DsTool { Compile, Launch };

/// What the command knows besides the file: its data-parallel size and the
/// batch and step flags given on the command line (they override the file's
/// keys in the batch rule).
struct DsContext {
  DsTool tool = DsTool::Compile;
  int64_t dp = 1;
  std::optional<int64_t> batch, microBatches, steps; // launch: --batch, --micro-batches, --steps
};

/// One flag the file sets: its name without dashes, its value as the user
/// would type it, and the key it comes from.
struct DsSetting {
  std::string flag, value, key;
};

/// A config file resolved for one command.
struct DsMapping {
  std::string file;
  std::vector<DsSetting> settings;
  std::vector<std::string> warnings; // whole lines, without "partita: warning: "
  std::optional<int64_t> microBatch; // the per-replica batch the batch rule gives
  std::string microBatchFrom;        // how ("train_micro_batch_size_per_gpu 4")
  std::string precision = "fp32";    // the half type fp16 / bf16 "enabled" asks for
  std::string precisionFrom;         // that key ("fp16.enabled")
};

/// DeepSpeed's batch rule, train_batch_size = micro × accumulation × dp:
/// given two of the three the third is derived, given one the accumulation
/// is 1, given all three they must agree. `microLabel` / `accumulationLabel`
/// name where those came from in errors (a key, or a flag that overrides it).
struct DsBatch {
  std::optional<int64_t> train, micro, accumulation;
};
llvm::Expected<DsBatch> solveBatchRule(const DsBatch &given, int64_t dp, llvm::StringRef microLabel,
                                       llvm::StringRef accumulationLabel);

/// The config `text` (read from `file`, named in errors) for `ctx`'s command.
llvm::Expected<DsMapping> resolveDsConfig(llvm::StringRef text, llvm::StringRef file, const DsContext &ctx);

/// Sets each of `m`'s settings on its flag of `sub` unless the command line
/// gave that flag.
llvm::Error applyDsSettings(const DsMapping &m, llvm::cl::SubCommand &sub);

/// compile: reads `file` (nothing when empty), prints the warnings and sets
/// the compile flags it maps to.
llvm::Expected<DsMapping> useDsConfigForCompile(llvm::StringRef file, llvm::cl::SubCommand &sub, int64_t dp);
/// compile, once the plan is written into `dir`: the batch rule's per-replica
/// batch is the model's (the leading dimension of its first input).
llvm::Error checkDsCompiledBatch(const DsMapping &m, llvm::StringRef dir);
/// launch (and each worker, `report` false: the launcher printed the
/// warnings): reads `file` (nothing when empty) with the plan's dp and sets
/// the training flags it maps to.
llvm::Error useDsConfigForLaunch(llvm::StringRef file, llvm::cl::SubCommand &sub, const Plan &plan,
                                 const rt::TrainOptions &train, bool report);

} // namespace partita
