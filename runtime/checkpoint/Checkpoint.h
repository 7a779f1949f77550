//===- Checkpoint.h - training checkpoints: their folder and their index --===//
//
// `launch --save DIR` writes DIR/step-00000100/ every --save-interval steps:
//
//   rank00003.bin    the pieces of training state rank 3 saves (TrainState.h:
//                    weights, fp32 masters, moments; each piece once, by
//                    one of the ranks holding it), back to back
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
// A save copies the rank's pieces to a host snapshot (on the CPU device a
// memory copy) and, by default, writes them from a background thread while
// training goes on; after each step the ranks check (one small all-reduce
// while a save is pending) whether all have written, and rank 0 then puts the
// checkpoint in place. A save waits only for the previous one.
//
// `launch --resume DIR|DIR/step-N` reads the index, restores the progress and
// the loss scaler, and fills each piece of this rank's state from the saved
// pieces that overlap it, under whatever layout they were saved
// (StateBox.h), checking each piece's hash first.
//===----------------------------------------------------------------------===//
#pragma once
#include "runtime/comm/Communicator.h"
#include "runtime/train/TrainState.h"
#include <atomic>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace partita::rt {

inline constexpr const char *kCheckpointFormat = "partita-checkpoint-1";
inline constexpr const char *kCheckpointIndex = "checkpoint.json";
inline constexpr const char *kLatestFile = "latest";
/// The lock a run's rank 0 holds on its --save folder (flock): two runs never save into one.
inline constexpr const char *kSaveLock = "lock";
/// Marks an unfinished save's folder as Partita's: only such a folder (or an
/// empty one) is ever removed.
extern const char *const kPartialMarker;

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
  /// `world`: every rank of the job. keep <= 0: keep all. `async`: the
  /// state is copied to a host snapshot and written by a background thread
  /// while training goes on.
  CheckpointWriter(std::string dir, int keep, Communicator &world, int rank, bool async);
  ~CheckpointWriter();
  /// Before the first step (every rank): allocates the host snapshot for
  /// `state` (its memory then not faulted in during a step) and takes the
  /// folder's lock.
  llvm::Error reserve(const TrainState &state);
  /// Saves `state` as checkpoint state.progress.step; every rank calls it
  /// after the same step. Waits for the previous save first.
  llvm::Error save(const TrainState &state, const CheckpointRun &run);
  /// After each step (every rank): puts a save in place once every rank has
  /// written its part; a no-op without one pending.
  llvm::Error poll();
  /// At the end of the run: waits for the pending save and puts it in place.
  llvm::Error finish();

private:
  /// What a save writes, copied from the state when it starts.
  struct Snapshot {
    struct Piece {
      std::string name, kind;
      DType dtype;
      Shape whole;
      StateBox box;
      size_t offset, bytes; // in `data`
    };
    std::vector<Piece> pieces;
    std::vector<uint8_t> data;
    TrainProgress progress;
    std::optional<LossScalerState> scaler;
    CheckpointRun run;
    std::string name, tmp, final;
  };
  llvm::Error begin(const TrainState &state, const CheckpointRun &run);
  llvm::Error writeRankFile();
  /// Every rank has written (or failed): agree, then rank 0 writes the index,
  /// renames the folder into place, moves `latest`, applies --keep.
  llvm::Error complete(llvm::Error own);
  llvm::Error writeIndex();
  llvm::Error removeOld();
  llvm::Error lockFolder();
  void reserveSnapshot(const TrainState &state);
  void killForTest(llvm::StringRef phase) const;
  std::string dir_;
  int keep_;
  Communicator *world_;
  int rank_;
  bool async_;
  const Plan *plan_ = nullptr;
  Snapshot snap_;
  bool pending_ = false;
  std::thread writer_;
  std::atomic<bool> written_{false};
  std::string writeError_; // the writer thread's, once written_
  std::vector<std::string> saved_; // this run's checkpoints, oldest first
  int lock_ = -1;                  // rank 0: the --save folder's lock, held for the run
};

/// The checkpoint folder `path` names: itself when it has an index, else the
/// one its `latest` names.
llvm::Expected<std::string> resolveCheckpoint(llvm::StringRef path);

/// Restores `state` (its progress, loss scaler and every registered tensor)
/// from the checkpoint in `folder` (resolveCheckpoint's); `run` is the
/// resumed run's, checked against the saved one's where the sampler depends
/// on it.
llvm::Error loadCheckpoint(TrainState &state, llvm::StringRef folder, const CheckpointRun &run);

/// Every rank learns whether any failed: its own error, or one saying
/// another rank failed to `what` (collective over `world`).
llvm::Error agreeOnErrors(Communicator &world, llvm::Error err, llvm::StringRef what);

} // namespace partita::rt
