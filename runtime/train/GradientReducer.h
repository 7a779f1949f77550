//===- GradientReducer.h - gradient sums over micro-batches and dp replicas ===//
//
// The data-parallel gradient all-reduce, placed by hand until the compiler
// places it in the step program (issue 11): gradients live in buckets of
// about `bucketMb` (DDP-style), in parameter order; every backward adds its
// gradients into them; in the step's last backward each bucket's all-reduce
// over dp starts as soon as its last gradient is in, while the rest of the
// backward runs (`overlap`; otherwise all start after it). finish() waits for
// them, leaving sums over micro-batches and replicas.
//===----------------------------------------------------------------------===//
#pragma once
#include "runtime/comm/Communicator.h"
#include "runtime/core/TensorView.h"
#include <vector>

namespace partita::rt {

class GradientReducer {
public:
  /// One f32 gradient per parameter, shaped like it. `dp` null or of one
  /// rank: sums over micro-batches only.
  GradientReducer(llvm::ArrayRef<const TensorView *> params, Communicator *dp, double bucketMb, bool overlap);

  /// Where parameter i's gradient sum lives (inside its bucket).
  float *gradient(size_t i) const { return grads_[i]; }
  size_t numBuckets() const { return buckets_.size(); }
  size_t bucketOf(size_t i) const { return bucketOf_[i]; }
  /// Whether the sums are all-reduced over replicas.
  bool reducing() const { return reducing_; }

  /// Forgets the previous step: the next add() of each gradient replaces it.
  void beginStep();
  /// Adds one backward's gradient `g` of parameter i (the first of a step is
  /// copied, unless it was written in place). With `last`, the step's last
  /// backward, a bucket whose gradients are all in starts its all-reduce.
  void add(size_t i, const TensorView &g, bool last);
  /// Whether a backward (`last` or not) overlaps all-reduces: then call
  /// progress() between its kernels.
  bool overlapsBackward(bool last) const { return last && reducing_ && overlap_; }
  /// Lets started all-reduces advance (MPI moves them only inside MPI calls).
  void progress() { dp_->progress(); }
  /// The error of an all-reduce started during a backward, if any.
  llvm::Error takeStartError() { return std::move(startError_); }
  /// Starts what has not started and waits for every bucket's all-reduce.
  llvm::Error finish();
  /// The mean of `loss` over the replicas (unchanged without reduction).
  llvm::Error averageLoss(float &loss);
  /// Multiplies every gradient by c.
  void scale(float c);

private:
  void startBucket(size_t b);

  Communicator *dp_;
  bool reducing_, overlap_;
  std::vector<std::vector<float>> buckets_;
  std::vector<size_t> bucketOf_;
  std::vector<float *> grads_;
  std::vector<bool> written_;   // per parameter: added to this step
  std::vector<size_t> pending_; // per bucket: gradients still to come in the last backward
  std::vector<int> handles_;    // per bucket: its all-reduce, -1 before it starts
  llvm::Error startError_ = llvm::Error::success();
};

} // namespace partita::rt
