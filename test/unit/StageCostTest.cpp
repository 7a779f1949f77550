#include "compiler/ir/Parser.h"
#include "passes/StageCost.h"
#include <gtest/gtest.h>

using namespace partita;

// Each quantity of the cost model against its formula, on a head-like
// product by a weight, a lookup, and a softmax.
TEST(StageCost, FollowsTheFormulas) {
  auto g = parseGraph("graph @g(%x: f32[2,16,32], %ids: i64[2,16]) opset 17 {\n"
                      "  %w = Weight() {name = \"w\"} : f32[32,64]\n"
                      "  %t = Weight() {name = \"t\"} : f32[100,32]\n"
                      "  %y = MatMul(%x, %w) : f32[2,16,64]\n"
                      "  %e = Gather(%t, %ids) : f32[2,16,32]\n"
                      "  %s = Softmax(%y) {axis = -1} : f32[2,16,64]\n"
                      "  %w.T = Transpose(%w) {perm = [1, 0]} : f32[64,32]\n"
                      "  %z = MatMul(%s, %w.T) : f32[2,16,32]\n"
                      "  return %z, %e\n}\n",
                      "t.pir");
  ASSERT_TRUE(static_cast<bool>(g)) << llvm::toString(g.takeError());
  llvm::DenseSet<const Value *> seen;
  auto node = [&](const char *out) { return (*g)->findValue(out)->definingNode(); };
  NodeCost mm = forwardCost(*node("y"), seen);
  EXPECT_DOUBLE_EQ(mm.flops, 2.0 * 2 * 16 * 64 * 32);
  EXPECT_DOUBLE_EQ(mm.bytes, 4.0 * (2 * 16 * 32 + 32 * 64 + 2 * 16 * 64));
  EXPECT_DOUBLE_EQ(mm.parameters, 4.0 * 32 * 64);
  EXPECT_DOUBLE_EQ(mm.stashed, 4.0 * 2 * 16 * 32); // x, not the weight
  // A lookup reads the rows it writes (and the ids), and holds the whole table.
  NodeCost lookup = forwardCost(*node("e"), seen);
  EXPECT_DOUBLE_EQ(lookup.bytes, 4.0 * 2 * 16 * 32 * 2 + 8.0 * 2 * 16);
  EXPECT_DOUBLE_EQ(lookup.parameters, 4.0 * 100 * 32);
  EXPECT_DOUBLE_EQ(lookup.stashed, 0);
  // A weight counts once, on its first reader.
  NodeCost t = forwardCost(*node("w.T"), seen);
  EXPECT_DOUBLE_EQ(t.parameters, 0);
  // A softmax: memory-bound at the default balance, its time is its traffic.
  NodeCost sm = forwardCost(*node("s"), seen);
  EXPECT_DOUBLE_EQ(sm.flops, 2.0 * 16 * 64);
  EXPECT_DOUBLE_EQ(sm.time(kDefaultIntensity), 4.0 * 2 * 2 * 16 * 64 * kDefaultIntensity);
  EXPECT_DOUBLE_EQ(mm.time(1), mm.flops);
}
