#include "runtime/executor/MemoryPlanner.h"
#include <gtest/gtest.h>
#include <random>

using namespace partita::rt;

TEST(MemoryPlanner, ChainReusesTheFirstBuffer) {
  // a -> b -> c: a is dead when c is written, so c takes a's place.
  std::vector<BufferRequest> r = {{128, 0, 1}, {128, 1, 2}, {128, 2, 3}};
  MemoryPlan p = planMemory(r, 64);
  EXPECT_EQ(p.lowerBoundBytes, 256u);
  EXPECT_EQ(p.arenaBytes, 256u);
  EXPECT_EQ(p.offsets[0], p.offsets[2]);
  EXPECT_NE(p.offsets[0], p.offsets[1]);
}

TEST(MemoryPlanner, AlignsEveryBuffer) {
  std::vector<BufferRequest> r = {{10, 0, 0}, {10, 0, 0}, {10, 0, 0}};
  MemoryPlan p = planMemory(r, 64);
  for (size_t off : p.offsets)
    EXPECT_EQ(off % 64, 0u);
  EXPECT_EQ(p.arenaBytes, 192u);
  EXPECT_EQ(p.lowerBoundBytes, 30u);
}

// Property: buffers alive at the same time never overlap, and the arena is
// never below the lower bound, on random lifetimes.
TEST(MemoryPlanner, NoOverlapOnRandomLifetimes) {
  std::mt19937 rng(42);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<BufferRequest> r(1 + rng() % 40);
    for (auto &b : r) {
      b.bytes = 64 * (1 + rng() % 32);
      b.firstStep = rng() % 50;
      b.lastStep = b.firstStep + rng() % 10;
    }
    MemoryPlan p = planMemory(r, 64);
    ASSERT_GE(p.arenaBytes, p.lowerBoundBytes);
    for (size_t i = 0; i < r.size(); ++i)
      for (size_t j = i + 1; j < r.size(); ++j) {
        bool liveTogether = r[i].firstStep <= r[j].lastStep && r[j].firstStep <= r[i].lastStep;
        bool disjoint = p.offsets[i] + r[i].bytes <= p.offsets[j] || p.offsets[j] + r[j].bytes <= p.offsets[i];
        ASSERT_TRUE(!liveTogether || disjoint) << "trial " << trial << " buffers " << i << "," << j;
      }
  }
}
