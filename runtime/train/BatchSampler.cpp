//===- BatchSampler.cpp ---------------------------------------------------===//
#include "runtime/train/BatchSampler.h"

namespace partita::rt {

/// The stream's generator (test/train/check_training.py mirrors it).
static uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

llvm::Expected<BatchSampler> BatchSampler::create(const TokenFile &tokens, const BatchLayout &layout, int seed) {
  int64_t n = tokens.size(), T = layout.seq;
  if (n < T + 2)
    return llvm::createStringError(llvm::inconvertibleErrorCode(), tokens.path() + ": " + llvm::Twine(n) +
                                                                       " tokens, fewer than one sequence of " +
                                                                       llvm::Twine(T + 1));
  return BatchSampler(tokens, layout, seed);
}

uint64_t BatchSampler::sampleIndex(int64_t step, int64_t micro, int64_t b) const {
  const BatchLayout &l = layout_;
  return static_cast<uint64_t>(l.firstSample + ((step - l.firstStep - 1) * l.dpSize + l.dpIndex) * l.microBatches * l.batch +
                               micro * l.batch + b);
}

int64_t BatchSampler::offset(uint64_t index) const {
  uint64_t span = static_cast<uint64_t>(tokens_->size() - layout_.seq - 1);
  return static_cast<int64_t>(splitmix64(static_cast<uint64_t>(seed_) * 1000003ull + index) % span);
}

llvm::Error BatchSampler::fill(int64_t step, int64_t micro, int64_t vocab, std::vector<int64_t> &ids,
                               std::vector<int64_t> &labels) const {
  int64_t B = layout_.batch, T = layout_.seq;
  ids.resize(B * T);
  labels.resize(B * T);
  for (int64_t b = 0; b < B; ++b) {
    int64_t off = offset(sampleIndex(step, micro, b));
    for (int64_t t = 0; t < T; ++t) {
      ids[b * T + t] = (*tokens_)[off + t];
      labels[b * T + t] = (*tokens_)[off + t + 1];
    }
    // Large corpora are not scanned up front: each sequence is checked as it is drawn.
    if (auto err = tokens_->checkRange(vocab, off, off + T + 1))
      return err;
  }
  return llvm::Error::success();
}

} // namespace partita::rt
