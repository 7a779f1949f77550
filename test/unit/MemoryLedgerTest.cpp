#include "runtime/core/MemoryLedger.h"
#include <gtest/gtest.h>
#include <utility>

using namespace partita::rt;

namespace {
size_t now(MemoryCategory c) { return MemoryLedger::process().current()[static_cast<size_t>(c)]; }
} // namespace

// Charges follow their owners: resized, moved, destroyed; the peak keeps the
// largest total and what made it up.
TEST(MemoryLedger, ChargesFollowTheirOwners) {
  MemoryLedger &ledger = MemoryLedger::process();
  ledger.resetPeak();
  size_t base = ledger.peak(), comm0 = now(MemoryCategory::Communication), ws0 = now(MemoryCategory::Workspace);
  {
    MemoryCharge a(MemoryCategory::Communication, 1000);
    EXPECT_EQ(now(MemoryCategory::Communication), comm0 + 1000);
    a.resize(400);
    EXPECT_EQ(now(MemoryCategory::Communication), comm0 + 400);
    MemoryCharge b(std::move(a)); // the bytes move with the buffer, counted once
    EXPECT_EQ(now(MemoryCategory::Communication), comm0 + 400);
    EXPECT_EQ(a.bytes(), 0u);
    b.setCategory(MemoryCategory::Workspace);
    EXPECT_EQ(now(MemoryCategory::Communication), comm0);
    EXPECT_EQ(now(MemoryCategory::Workspace), ws0 + 400);
    EXPECT_EQ(ledger.peak(), base + 1000);
    EXPECT_EQ(ledger.atPeak()[static_cast<size_t>(MemoryCategory::Communication)], comm0 + 1000);
  }
  EXPECT_EQ(now(MemoryCategory::Workspace), ws0);
  EXPECT_EQ(ledger.peak(), base + 1000); // a peak stays until reset
  ledger.resetPeak();
  EXPECT_EQ(ledger.peak(), base);
  EXPECT_STREQ(memoryCategoryName(MemoryCategory::OptimizerStates), "optimizer states");
}
