//===- TrainRank.h - the training loop of one rank ------------------------===//
#pragma once
#include "runtime/comm/Communicator.h"
#include "compiler/plan/Plan.h"
#include "llvm/Support/Error.h"
#include <string>
#include <vector>

namespace partita {

/// `partita launch`'s training options (see LaunchCommand.cpp for each flag).
struct TrainOptions {
  std::string planDir, data, outDir, schedule = "constant", dataDtype = "uint16";
  std::string idsInput; // --ids-input: the token-id input (default: found by trainingInputRoles, InputRoles.h)
  int steps = 0, batch = 0, seq = 0, seed = 0, microBatches = 1, warmup = 0;
  double lr = 1e-3, minLrRatio = 0, clipNorm = 0, bucketMb = 25;
  bool skipNonfinite = false, progressBar = false, profile = false, profileByNode = false, noOverlap = false;
};

/// Trains this rank of a --train plan; every rank of the job calls it.
llvm::Error trainRank(int rank, const Plan &plan, const rt::RuntimeEnv &env, const TrainOptions &o);

} // namespace partita
