//===- GradientReducer.cpp ------------------------------------------------===//
#include "runtime/train/GradientReducer.h"
#include <algorithm>
#include <cstring>

namespace partita::rt {

GradientReducer::GradientReducer(llvm::ArrayRef<const TensorView *> params, Communicator *dp, double bucketMb,
                                 bool overlap)
    : dp_(dp), reducing_(dp && dp->size() > 1), overlap_(overlap), bucketOf_(params.size()),
      grads_(params.size()), written_(params.size()) {
  std::vector<size_t> offset(params.size());
  size_t limit = static_cast<size_t>(std::max(1.0, bucketMb * 1e6));
  for (size_t i = 0; i < params.size(); ++i) {
    size_t bytes = params[i]->bytes();
    if (buckets_.empty() || (!buckets_.back().empty() && buckets_.back().size() * 4 + bytes > limit))
      buckets_.emplace_back();
    bucketOf_[i] = buckets_.size() - 1;
    offset[i] = buckets_.back().size();
    buckets_.back().resize(buckets_.back().size() + params[i]->numel());
  }
  for (size_t i = 0; i < params.size(); ++i)
    grads_[i] = buckets_[bucketOf_[i]].data() + offset[i];
  beginStep();
}

void GradientReducer::beginStep() {
  std::fill(written_.begin(), written_.end(), false);
  pending_.assign(buckets_.size(), 0);
  for (size_t b : bucketOf_)
    ++pending_[b];
  handles_.assign(buckets_.size(), -1);
  llvm::consumeError(std::move(startError_));
  startError_ = llvm::Error::success();
}

void GradientReducer::add(size_t i, const TensorView &g, bool last) {
  float *acc = grads_[i];
  const float *add = static_cast<const float *>(g.data);
  if (!written_[i]) {
    if (acc != add)
      std::memcpy(acc, add, g.bytes());
    written_[i] = true;
  } else {
    int64_t count = g.numel();
#pragma omp parallel for if (count > (1 << 16))
    for (int64_t k = 0; k < count; ++k)
      acc[k] += add[k];
  }
  if (!overlapsBackward(last))
    return;
  size_t b = bucketOf_[i];
  if (--pending_[b] == 0 && !startError_)
    startBucket(b);
}

void GradientReducer::startBucket(size_t b) {
  auto h = dp_->startAllReduce(buckets_[b].data(), buckets_[b].size(), DType::F32);
  if (!h)
    startError_ = h.takeError();
  else
    handles_[b] = *h;
}

llvm::Error GradientReducer::finish() {
  if (!reducing_)
    return llvm::Error::success();
  if (!overlap_)
    for (size_t b = 0; b < buckets_.size() && !startError_; ++b)
      startBucket(b);
  if (startError_)
    return std::move(startError_);
  for (size_t b = 0; b < buckets_.size(); ++b) {
    if (handles_[b] < 0)
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "gradient bucket " + llvm::Twine(b) + " was never complete");
    if (auto err = dp_->wait(handles_[b]))
      return err;
  }
  return llvm::Error::success();
}

llvm::Error GradientReducer::averageLoss(float &loss) {
  if (!reducing_)
    return llvm::Error::success();
  if (auto err = dp_->allReduce(&loss, 1, DType::F32))
    return err;
  loss /= static_cast<float>(dp_->size());
  return llvm::Error::success();
}

void GradientReducer::scale(float c) {
  for (std::vector<float> &b : buckets_) {
    float *p = b.data();
    int64_t count = static_cast<int64_t>(b.size());
#pragma omp parallel for if (count > (1 << 16))
    for (int64_t k = 0; k < count; ++k)
      p[k] *= c;
  }
}

} // namespace partita::rt
