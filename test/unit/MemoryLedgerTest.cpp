#include "compiler/ir/Parser.h"
#include "compiler/ir/Tensor.h"
#include "runtime/core/Device.h"
#include "runtime/core/DeviceTensor.h"
#include "runtime/core/MemoryLedger.h"
#include "runtime/executor/Program.h"
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

// A ledger per device: what a program holds (its weights, outputs, arena)
// and a device tensor are charged to the device whose memory they are. The
// strict CPU device's memory is apart from the host's (its own ledger, as a
// GPU's); the CPU device's is the host's (the process's ledger).
TEST(MemoryLedger, EachDeviceCountsItsOwnMemory) {
  auto total = [](const MemoryLedger &l) {
    size_t t = 0;
    for (size_t b : l.current())
      t += b;
    return t;
  };
  StrictCpuDevice strict;
  CpuDevice cpu;
  ASSERT_EQ(&cpu.ledger(), &MemoryLedger::process());
  ASSERT_NE(&strict.ledger(), &MemoryLedger::process());
  const size_t host0 = total(MemoryLedger::process());
  {
    auto t = DeviceTensor::allocate(strict, partita::DType::F32, {1000}, MemoryCategory::OptimizerStates, "test");
    ASSERT_TRUE(static_cast<bool>(t)) << llvm::toString(t.takeError());
    EXPECT_EQ(strict.ledger().current()[static_cast<size_t>(MemoryCategory::OptimizerStates)], 4000u);
    EXPECT_EQ(total(MemoryLedger::process()), host0);
  }
  EXPECT_EQ(total(strict.ledger()), 0u);
  auto on = [&](Device &device) {
    auto g = partita::parseGraph("graph @g(%x: f32[64]) opset 17 {\n"
                                 "  %y = Neg(%x) : f32[64]\n  %z = Exp(%y) : f32[64]\n  return %z\n}\n",
                                 "t.pir");
    EXPECT_TRUE(static_cast<bool>(g));
    auto program = Program::load(**g, device);
    EXPECT_TRUE(static_cast<bool>(program)) << llvm::toString(program.takeError());
    // Kept alive: the CPU device's upload views the host bytes as they are.
    partita::Tensor zeros = partita::Tensor::zeros(partita::DType::F32, {64});
    auto x = DeviceTensor::upload(device, zeros, MemoryCategory::Activations, "x");
    EXPECT_TRUE(static_cast<bool>(x));
    auto outs = (*program)->run({{"x", x->view()}});
    EXPECT_TRUE(static_cast<bool>(outs)) << llvm::toString(outs.takeError());
    return std::make_pair(total(device.ledger()), total(MemoryLedger::process()));
  };
  auto [strictHeld, hostDuring] = on(strict);
  EXPECT_GE(strictHeld, 2 * 64u * 4); // the input and its output buffer at least
  EXPECT_EQ(hostDuring, host0);   // nothing of it on the host's ledger
  auto [cpuHeld, hostWithCpu] = on(cpu);
  EXPECT_GE(cpuHeld, host0 + 64u * 4);
  EXPECT_EQ(cpuHeld, hostWithCpu);
  EXPECT_EQ(total(MemoryLedger::process()), host0); // freed with the program
}
