//===- ShardingRulesTest.cpp - Concat and Slice rules along tp=2 ----------===//
//
// The math of each op: concatenating or slicing along a dimension that is not
// the split one is local whatever the split's outer factor (a replicated
// operand is cut, no communication); along the split dimension, equal blocks
// concatenate into an outer-factor split, and a slice that cuts the split
// dimension (including a same-size reversal) gathers it.
//===----------------------------------------------------------------------===//
#include "compiler/ir/Parser.h"
#include "passes/sharding/ShardingRules.h"
#include <gtest/gtest.h>

using namespace partita;

namespace {

constexpr const char *kGraph = "graph @g(%a: f32[2,4,8], %b: f32[2,4,8], %c: f32[2,4,8]) opset 17 {\n"
                               "  %cat2 = Concat(%a, %b) {axis = 2} : f32[2,4,16]\n"
                               "  %cat1 = Concat(%a, %b) {axis = 1} : f32[2,8,8]\n"
                               "  %s0 = Constant() {value = dense<i64[1]>[4]} : i64[1]\n"
                               "  %e0 = Constant() {value = dense<i64[1]>[8]} : i64[1]\n"
                               "  %ax2 = Constant() {value = dense<i64[1]>[2]} : i64[1]\n"
                               "  %hi = Slice(%a, %s0, %e0, %ax2) : f32[2,4,4]\n"
                               "  %rs = Constant() {value = dense<i64[1]>[-1]} : i64[1]\n"
                               "  %re = Constant() {value = dense<i64[1]>[-9223372036854775807]} : i64[1]\n"
                               "  %ax1 = Constant() {value = dense<i64[1]>[1]} : i64[1]\n"
                               "  %rev = Slice(%a, %rs, %re, %ax1, %rs) : f32[2,4,8]\n"
                               "  return %cat2, %cat1, %hi, %rev\n"
                               "}\n";

const Node &nodeMaking(const Graph &g, llvm::StringRef name) {
  const Value *v = g.findValue(name);
  EXPECT_TRUE(v && v->definingNode());
  return *v->definingNode();
}

class ShardingRules : public ::testing::Test {
protected:
  void SetUp() override {
    auto parsed = parseGraph(kGraph, "g.pir");
    ASSERT_TRUE(static_cast<bool>(parsed)) << llvm::toString(parsed.takeError());
    g = std::move(*parsed);
  }
  std::unique_ptr<Graph> g;
};

const Layout R = Layout::replicated();

} // namespace

TEST_F(ShardingRules, ConcatAlongAnotherAxisCutsReplicatedOperandsLocally) {
  // rotate-half's backward: Concat(dy split by heads, replicated zeros) on head_dim.
  RuleResult r = forwardLayouts(nodeMaking(*g, "cat2"), {Layout::split(1), R}, 2);
  EXPECT_EQ(r.operands, (std::vector<Layout>{Layout::split(1), Layout::split(1)}));
  EXPECT_EQ(r.results, (std::vector<Layout>{Layout::split(1)}));
  // An outer factor on the split dimension does not matter to a concat on another one.
  r = forwardLayouts(nodeMaking(*g, "cat2"), {R, Layout::split(1, 2)}, 2);
  EXPECT_EQ(r.operands, (std::vector<Layout>{Layout::split(1, 2), Layout::split(1, 2)}));
  EXPECT_EQ(r.results, (std::vector<Layout>{Layout::split(1, 2)}));
  // Partial sums concatenate as partial sums; a partial with a replicated operand reduces.
  r = forwardLayouts(nodeMaking(*g, "cat2"), {Layout::partialSum(), Layout::partialSum()}, 2);
  EXPECT_EQ(r.results, (std::vector<Layout>{Layout::partialSum()}));
  r = forwardLayouts(nodeMaking(*g, "cat2"), {Layout::partialSum(), R}, 2);
  EXPECT_EQ(r.results, (std::vector<Layout>{R}));
}

TEST_F(ShardingRules, ConcatAlongTheSplitAxisMakesAnOuterSplit) {
  // Each rank holds half of %a's and half of %b's dim 1: its local concat is
  // its half of both blocks of the result.
  RuleResult r = forwardLayouts(nodeMaking(*g, "cat1"), {Layout::split(1), Layout::split(1)}, 2);
  EXPECT_EQ(r.results, (std::vector<Layout>{Layout::split(1, 2)}));
  std::string why;
  auto ops = backwardLayouts(nodeMaking(*g, "cat1"), 0, Layout::split(1, 2), 2, why);
  ASSERT_TRUE(ops.has_value()) << why;
  EXPECT_EQ(*ops, (std::vector<Layout>{Layout::split(1), Layout::split(1)}));
  // A contiguous split of the result straddles the operands: impossible locally.
  EXPECT_FALSE(backwardLayouts(nodeMaking(*g, "cat1"), 0, Layout::split(1), 2, why).has_value());
  // One operand split, one replicated, along the axis: gather.
  r = forwardLayouts(nodeMaking(*g, "cat1"), {Layout::split(1), R}, 2);
  EXPECT_EQ(r.results, (std::vector<Layout>{R}));
}

TEST_F(ShardingRules, SliceIsLocalOffTheSplitDimensionOnly) {
  RuleResult r = forwardLayouts(nodeMaking(*g, "hi"), {Layout::split(1, 2)}, 2);
  EXPECT_EQ(r.results, (std::vector<Layout>{Layout::split(1, 2)}));
  r = forwardLayouts(nodeMaking(*g, "hi"), {Layout::split(2)}, 2);
  EXPECT_EQ(r.operands[0], R);
  // Reversing dim 1 keeps its size but not the ranks' blocks.
  r = forwardLayouts(nodeMaking(*g, "rev"), {Layout::split(1)}, 2);
  EXPECT_EQ(r.operands[0], R);
  r = forwardLayouts(nodeMaking(*g, "rev"), {Layout::split(2)}, 2);
  EXPECT_EQ(r.results, (std::vector<Layout>{Layout::split(2)}));
}
