//===- Trainer.h - the training loop of one rank --------------------------===//
//
// Runs the accumulation schedule for every step on the session's "forward"
// (the loss and the saved activations), "backward" (the gradients),
// "grad_norm" and "step" (AdamW) programs, feeding each micro-batch
// from the batch sampler; rank 0 logs each step, every rank writes its
// parameter shards at the end. With --save the run checkpoints its
// TrainState; with --resume it goes on from one.
//===----------------------------------------------------------------------===//
#pragma once
#include "runtime/session/Session.h"
#include "runtime/train/TrainOptions.h"

namespace partita::rt {

/// Trains this rank of a --train plan; every rank of the job calls it. Rank 0
/// writes outDir/loss.csv, rank k its shards into outDir/rank<k>. `world`
/// (every rank) agrees on checkpoints' success.
llvm::Error train(Session &session, Communicator &world, const TrainOptions &options, llvm::StringRef outDir);

/// The steps a run saves a checkpoint after: every `interval`-th in
/// (first, last], and the last.
std::vector<int64_t> checkpointSteps(int64_t first, int64_t last, int64_t interval);

} // namespace partita::rt
