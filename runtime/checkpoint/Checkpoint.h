//===- Checkpoint.h - training checkpoints: their folder and their index --===//
//
// `launch --save DIR` writes DIR/step-00000100/ every --save-interval steps:
//
//   rank00003.bin    the pieces of training state rank 3 saves (TrainState.h:
//                    weights, fp32 masters, moments; each piece once, by the
//                    first of the ranks holding it), back to back
//   checkpoint.json  the index: format, progress (steps, updates, samples,
//                    seed), the loss scaler, the layout it was saved under,
//                    the data, and for every tensor its whole shape, dtype
//                    and pieces: file, offset, StateBox, xxh64 of the bytes
//
// and DIR/latest, the name of the newest complete checkpoint. Nothing is
// lost: a checkpoint is written into DIR/step-N.partial (created here), every
// file flushed to disk, renamed into place, and only then does `latest` move
// (written beside and renamed). A crash at any point leaves the previous
// checkpoint and `latest` as they were. --keep K removes, after a save, the
// oldest checkpoints this run wrote beyond K, file by file (only the files a
// checkpoint has; a folder holding anything else stays). DIR itself must be
// new, empty, or hold only what --save writes: nothing of anyone else's is
// ever touched. Every host must see DIR (a shared file system): rank 0
// writes the index from every rank's record and fails, naming the rank, when
// one is missing.
//
// `launch --resume DIR|DIR/step-N` reads the index, restores the progress and
// the loss scaler, and fills each piece of this rank's state from the saved
// pieces that overlap it, under whatever layout they were saved
// (StateBox.h), checking each piece's hash first.
//===----------------------------------------------------------------------===//
#pragma once
#include "runtime/comm/Communicator.h"
#include "runtime/train/TrainState.h"
#include <string>
#include <vector>

namespace partita::rt {

inline constexpr const char *kCheckpointFormat = "partita-checkpoint-1";
inline constexpr const char *kCheckpointIndex = "checkpoint.json";
inline constexpr const char *kLatestFile = "latest";

/// What the index records beside the state: the run it belongs to.
struct CheckpointRun {
  std::string data;   // the token file
  int64_t tokens = 0; // its length
  int64_t batch = 0, seq = 0, microBatches = 0, dpSize = 0; // the sampler's layout when saved
};

/// "step-00000100".
std::string checkpointName(int64_t step);

/// Checks, before a run starts, that `dir` may take its checkpoints: new,
/// empty, or holding only what --save writes, and no checkpoint there yet of
/// a step in `steps` (the steps the run will save: it never replaces one).
llvm::Error checkCheckpointDir(llvm::StringRef dir, llvm::ArrayRef<int64_t> steps);

class CheckpointWriter {
public:
  /// `world`: every rank of the job. keep <= 0: keep all.
  CheckpointWriter(std::string dir, int keep, Communicator &world, int rank)
      : dir_(std::move(dir)), keep_(keep), world_(&world), rank_(rank) {}
  /// Saves `state` as checkpoint state.progress.step; every rank calls it.
  llvm::Error save(const TrainState &state, const CheckpointRun &run);

private:
  llvm::Error writeRankFile(const TrainState &state, llvm::StringRef tmp);
  llvm::Error writeIndex(const TrainState &state, const CheckpointRun &run, llvm::StringRef tmp);
  llvm::Error removeOld();
  std::string dir_;
  int keep_;
  Communicator *world_;
  int rank_;
  std::vector<std::string> written_; // this run's checkpoints, oldest first
};

/// The checkpoint folder `path` names: itself when it has an index, else the
/// one its `latest` names.
llvm::Expected<std::string> resolveCheckpoint(llvm::StringRef path);

/// The step checkpoint `folder` was saved after.
llvm::Expected<int64_t> checkpointStep(llvm::StringRef folder);

/// Restores `state` (its progress, loss scaler and every registered tensor)
/// from the checkpoint in `folder` (resolveCheckpoint's); `run` is the
/// resumed run's, checked against the saved one's where the sampler depends
/// on it.
llvm::Error loadCheckpoint(TrainState &state, llvm::StringRef folder, const CheckpointRun &run);

/// Every rank learns whether any failed: its own error, or one saying
/// another rank failed to `what` (collective over `world`).
llvm::Error agreeOnErrors(Communicator &world, llvm::Error err, llvm::StringRef what);

} // namespace partita::rt
