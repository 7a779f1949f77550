// The batch sampler's properties: every sequence and its labels lie in the
// file, the same step draws the same batch, replicas split the global batch
// without overlap, and the global batch does not depend on how it is split
// into replicas and micro-batches.
#include "runtime/train/BatchSampler.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"
#include <gtest/gtest.h>
#include <set>

using namespace partita;
using namespace partita::rt;

namespace {
/// A flat uint16 file of ids 0..n-1 (mod 65536), removed at the end.
struct TokenFixture {
  std::string path;
  explicit TokenFixture(int64_t n) {
    llvm::SmallString<128> p;
    int fd;
    EXPECT_FALSE(llvm::sys::fs::createTemporaryFile("tokens", "bin", fd, p));
    llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
    for (int64_t i = 0; i < n; ++i) {
      uint16_t v = static_cast<uint16_t>(i);
      os.write(reinterpret_cast<const char *>(&v), 2);
    }
    path = p.str().str();
  }
  ~TokenFixture() { llvm::sys::fs::remove(path); }
};

BatchSampler sampler(const TokenFile &tokens, BatchLayout layout, int seed = 0) {
  auto s = BatchSampler::create(tokens, layout, seed);
  EXPECT_TRUE(static_cast<bool>(s));
  return std::move(*s);
}
} // namespace

TEST(BatchSampler, SequencesAndLabelsLieInTheFile) {
  TokenFixture f(40);
  auto tokens = TokenFile::open(f.path);
  ASSERT_TRUE(static_cast<bool>(tokens));
  BatchSampler s = sampler(*tokens, {2, 8, 1, 1, 0});
  for (uint64_t k = 0; k < 2000; ++k) {
    int64_t off = s.offset(k);
    EXPECT_GE(off, 0);
    EXPECT_LT(off, 40 - 8 - 1); // off + T, the last label, is inside
  }
  std::vector<int64_t> ids, labels;
  ASSERT_FALSE(llvm::errorToBool(s.fill(3, 0, 0, ids, labels)));
  ASSERT_EQ(ids.size(), 16u);
  for (size_t i = 0; i < ids.size(); ++i) // the file holds 0..39: each label is the next id
    EXPECT_EQ(labels[i], ids[i] + 1);
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t t = 1; t < 8; ++t)
      EXPECT_EQ(ids[b * 8 + t], ids[b * 8] + t);
}

TEST(BatchSampler, TheSameStepDrawsTheSameBatch) {
  TokenFixture f(1000);
  auto tokens = TokenFile::open(f.path);
  ASSERT_TRUE(static_cast<bool>(tokens));
  BatchSampler a = sampler(*tokens, {4, 16, 2, 1, 0}, 7), b = sampler(*tokens, {4, 16, 2, 1, 0}, 7);
  std::vector<int64_t> ia, la, ib, lb;
  ASSERT_FALSE(llvm::errorToBool(a.fill(5, 1, 0, ia, la)));
  ASSERT_FALSE(llvm::errorToBool(b.fill(5, 1, 0, ib, lb)));
  EXPECT_EQ(ia, ib);
  EXPECT_EQ(la, lb);
  // Another seed, or another step, draws other sequences.
  BatchSampler c = sampler(*tokens, {4, 16, 2, 1, 0}, 8);
  std::vector<int64_t> ic, lc;
  ASSERT_FALSE(llvm::errorToBool(c.fill(5, 1, 0, ic, lc)));
  EXPECT_NE(ia, ic);
  ASSERT_FALSE(llvm::errorToBool(a.fill(6, 1, 0, ic, lc)));
  EXPECT_NE(ia, ic);
}

TEST(BatchSampler, ReplicasSplitTheGlobalBatchWithoutOverlap) {
  TokenFixture f(1000);
  auto tokens = TokenFile::open(f.path);
  ASSERT_TRUE(static_cast<bool>(tokens));
  const int64_t B = 3, M = 2, dp = 4, steps = 5;
  std::set<uint64_t> seen;
  for (int64_t d = 0; d < dp; ++d) {
    BatchSampler s = sampler(*tokens, {B, 8, M, dp, d});
    for (int64_t step = 1; step <= steps; ++step)
      for (int64_t m = 0; m < M; ++m)
        for (int64_t b = 0; b < B; ++b)
          EXPECT_TRUE(seen.insert(s.sampleIndex(step, m, b)).second) << "replica " << d << " step " << step;
  }
  // Together the replicas draw every sample of the steps once: 0..N-1.
  ASSERT_EQ(seen.size(), static_cast<size_t>(steps * dp * M * B));
  EXPECT_EQ(*seen.rbegin(), static_cast<uint64_t>(steps * dp * M * B - 1));
}

TEST(BatchSampler, TheGlobalBatchDoesNotDependOnItsSplit) {
  // 2 replicas x 1 micro-batch and 1 replica x 2 micro-batches train on the
  // same sequences: replica d's batch is micro-batch d's.
  TokenFixture f(500);
  auto tokens = TokenFile::open(f.path);
  ASSERT_TRUE(static_cast<bool>(tokens));
  BatchSampler one = sampler(*tokens, {2, 8, 2, 1, 0}, 3);
  for (int64_t d = 0; d < 2; ++d) {
    BatchSampler replica = sampler(*tokens, {2, 8, 1, 2, d}, 3);
    for (int64_t step = 1; step <= 3; ++step) {
      std::vector<int64_t> ia, la, ib, lb;
      ASSERT_FALSE(llvm::errorToBool(replica.fill(step, 0, 0, ia, la)));
      ASSERT_FALSE(llvm::errorToBool(one.fill(step, d, 0, ib, lb)));
      EXPECT_EQ(ia, ib);
    }
  }
}

TEST(BatchSampler, RefusesAFileShorterThanOneSequence) {
  TokenFixture f(9);
  auto tokens = TokenFile::open(f.path);
  ASSERT_TRUE(static_cast<bool>(tokens));
  auto s = BatchSampler::create(*tokens, {1, 8, 1, 1, 0}, 0);
  ASSERT_FALSE(static_cast<bool>(s));
  EXPECT_NE(llvm::toString(s.takeError()).find("9 tokens, fewer than one sequence of 9"), std::string::npos);
}

TEST(BatchSampler, ChecksTheIdsItDraws) {
  TokenFixture f(100); // ids 0..99
  auto tokens = TokenFile::open(f.path);
  ASSERT_TRUE(static_cast<bool>(tokens));
  BatchSampler s = sampler(*tokens, {4, 8, 1, 1, 0});
  std::vector<int64_t> ids, labels;
  llvm::Error err = s.fill(1, 0, /*vocab=*/5, ids, labels);
  EXPECT_NE(llvm::toString(std::move(err)).find("outside the model's vocabulary [0, 5)"), std::string::npos);
}
