//===- TrainRank.h - the training loop of one rank ------------------------===//
#pragma once
#include "runtime/comm/Communicator.h"
#include "tools/Plan.h"
#include "llvm/Support/Error.h"
#include <map>
#include <string>
#include <vector>

namespace partita {

/// `partita launch`'s training options (see LaunchCommand.cpp for each flag).
struct TrainOptions {
  std::string planDir, data, outDir, schedule = "constant", dataDtype = "uint16";
  std::string idsInput; // --ids-input: the token-id input (default: found by trainingInputRoles)
  int steps = 0, batch = 0, seq = 0, seed = 0, microBatches = 1, warmup = 0;
  double lr = 1e-3, minLrRatio = 0, clipNorm = 0, bucketMb = 25;
  bool skipNonfinite = false, progressBar = false, profile = false, profileByNode = false, noOverlap = false;
};

/// What the training loop feeds each input of a training program.
enum class InputRole {
  Ids,           // the sampled token ids
  Labels,        // the next tokens (add-loss's input)
  AttentionMask, // ones: every sampled token is real
  PositionIds,   // 0..seq-1 in every row
};

/// The role of every input: `labels`; `attention_mask` and `position_ids` by
/// those names (Hugging Face's); the token ids are the input named by
/// `idsInput` (--ids-input) or else the one integer [batch, seq] input left.
/// An input the loop cannot feed, or a shape other than [batch, seq] ([1, seq]
/// for position ids), is an error naming it and the role options.
llvm::Expected<std::map<std::string, InputRole>> trainingInputRoles(const std::vector<TensorSpec> &inputs,
                                                                    llvm::StringRef idsInput, int64_t batch,
                                                                    int64_t seq);

/// Trains this rank of a --train plan; every rank of the job calls it.
llvm::Error trainRank(int rank, const Plan &plan, const rt::RuntimeEnv &env, const TrainOptions &o);

} // namespace partita
