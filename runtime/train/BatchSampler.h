//===- BatchSampler.h - which sequences a data-parallel replica trains on --===//
//
// The global batch of step s (1-based) is dpSize x M x B consecutive samples
// of one stream; replica d takes block d, micro-batch by micro-batch. A run
// resumed from a checkpoint goes on from the samples the saved run drew
// (BatchLayout::firstStep, firstSample), whatever its own batch layout. Sample k
// is the sequence starting at splitmix64(seed * 1000003 + k) mod (n - T - 1),
// so the global batch depends only on its size, never on how it is split
// into replicas and micro-batches (test/train/check_training.py mirrors the
// formula to feed torch the same batches).
//===----------------------------------------------------------------------===//
#pragma once
#include "runtime/train/TokenFile.h"
#include <vector>

namespace partita::rt {

struct BatchLayout {
  int64_t batch = 1, seq = 1;       // B sequences of T tokens per micro-batch
  int64_t microBatches = 1;         // M per step
  int64_t dpSize = 1, dpIndex = 0;  // data-parallel replicas, and this one
  /// A resumed run: step firstStep + 1 draws from sample firstSample on.
  int64_t firstStep = 0, firstSample = 0;
  /// Sequences per step over all replicas.
  int64_t globalBatch() const { return dpSize * microBatches * batch; }
};

class BatchSampler {
public:
  /// Fails when `tokens` holds fewer than one sequence and its next token.
  static llvm::Expected<BatchSampler> create(const TokenFile &tokens, const BatchLayout &layout, int seed);

  /// This replica's sample `b` of micro-batch `micro` of step `step` (1-based):
  /// its index in the stream.
  uint64_t sampleIndex(int64_t step, int64_t micro, int64_t b) const;
  /// The first token of sample `index`: in [0, n - T - 1), so the sequence
  /// and its next-token labels lie in the file.
  int64_t offset(uint64_t index) const;
  /// A micro-batch's token ids and labels (the next tokens), [B, T] row-major
  /// each; every token read is checked to lie in [0, vocab) (vocab 0: unchecked).
  llvm::Error fill(int64_t step, int64_t micro, int64_t vocab, std::vector<int64_t> &ids,
                   std::vector<int64_t> &labels) const;

private:
  BatchSampler(const TokenFile &tokens, const BatchLayout &layout, int seed)
      : tokens_(&tokens), layout_(layout), seed_(seed) {}
  const TokenFile *tokens_;
  BatchLayout layout_;
  int seed_;
};

} // namespace partita::rt
