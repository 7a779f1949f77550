//===- SavedCheckpoint.h - a checkpoint on disk, read back ----------------===//
//
// The index of a checkpoint folder (Checkpoint.h), parsed and checked: its
// progress, loss scaler, layout and every tensor with its pieces. It fills a
// rank's state tensors (load: the overlapping pieces read, each hash checked),
// checks before any rank starts that it fits a plan (checkPlan: every tensor
// the plan trains present, of the same shape, covered once; every file there
// and every piece's bytes matching their hash), and is what `partita inspect`
// shows and `partita merge` reads.
//===----------------------------------------------------------------------===//
#pragma once
#include "runtime/checkpoint/Checkpoint.h"
#include "llvm/Support/JSON.h"
#include <map>

namespace partita::rt {

class SavedCheckpoint {
public:
  struct Piece {
    std::string file; // the shard file's path
    uint64_t offset = 0, hash = 0;
    StateBox box;
  };
  struct Tensor {
    std::string name, kind;
    DType dtype = DType::F32;
    Shape shape;
    std::vector<Piece> pieces;
  };

  /// Reads `folder`'s index; the error names the file and what is wrong.
  static llvm::Expected<SavedCheckpoint> open(llvm::StringRef folder);

  const std::string &folder() const { return folder_; }
  const std::string &indexPath() const { return indexPath_; }
  const TrainProgress &progress() const { return progress_; }
  const std::optional<LossScalerState> &lossScaler() const { return scaler_; }
  /// The index's layout and data records, as saved.
  const llvm::json::Object &layout() const { return layout_; }
  const llvm::json::Object &data() const { return data_; }
  const std::vector<Tensor> &tensors() const { return tensors_; }
  const Tensor *find(llvm::StringRef name, llvm::StringRef kind) const;
  /// The shard files (paths), each with the bytes its pieces need.
  std::map<std::string, uint64_t> files() const;

  /// Fills `t.view` (its box of `t.whole`, memory of `device`) from the
  /// saved pieces that overlap it.
  llvm::Error load(const StateTensor &t, Device &device) const;
  /// Before any rank starts: every tensor `plan` trains is here in its shape
  /// and covered whole, every shard file is there, long enough, and every
  /// piece's bytes match their hash.
  llvm::Error checkPlan(const Plan &plan) const;
  /// The sampler can go on: the same --seed, data of the same length.
  llvm::Error checkRun(int64_t seed, const CheckpointRun &run) const;

private:
  /// The saved `kind` of `t`'s tensor, of its whole shape (else an error: another model).
  llvm::Expected<const Tensor *> matching(const StateTensor &t, llvm::StringRef kind) const;
  llvm::Error fill(const Tensor &saved, const StateTensor &want, void *dst) const;
  std::string folder_, indexPath_;
  TrainProgress progress_;
  std::optional<LossScalerState> scaler_;
  llvm::json::Object layout_, data_;
  std::vector<Tensor> tensors_;
  std::map<std::pair<std::string, std::string>, size_t> byName_;
};

} // namespace partita::rt
