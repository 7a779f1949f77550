// Reference evaluator checks against values computed by hand from the ONNX
// operator definitions.
#include "compiler/ir/Parser.h"
#include "compiler/ops/ConstantEvaluator.h"
#include "compiler/ops/OpRegistry.h"
#include <gtest/gtest.h>

using namespace partita;

static std::vector<double> evalLast(const char *text) {
  auto g = parseGraph(text, "t.pir");
  EXPECT_TRUE(static_cast<bool>(g));
  ConstantEvaluator eval;
  Node *last = nullptr;
  for (Node *n : (*g)->nodes()) {
    auto ok = eval.tryEvaluate(*n);
    EXPECT_TRUE(ok && *ok) << n->describe();
    last = n;
  }
  return eval.valueOf(last->output())->toDoubles();
}

TEST(ConstantEvaluator, SliceWithNegativeStep) {
  // x[::-2] of [0..5] = [5, 3, 1]
  auto v = evalLast("graph @g() opset 17 {\n"
                    "  %x = Constant() {value = dense<i64[6]>[0, 1, 2, 3, 4, 5]} : i64[6]\n"
                    "  %s = Constant() {value = dense<i64[1]>[-1]} : i64[1]\n"
                    "  %e = Constant() {value = dense<i64[1]>[-9223372036854775807]} : i64[1]\n"
                    "  %a = Constant() {value = dense<i64[1]>[0]} : i64[1]\n"
                    "  %st = Constant() {value = dense<i64[1]>[-2]} : i64[1]\n"
                    "  %y = Slice(%x, %s, %e, %a, %st) : i64[3]\n  return %y\n}\n");
  EXPECT_EQ(v, (std::vector<double>{5, 3, 1}));
}

TEST(ConstantEvaluator, IntegerDivTruncatesAndGatherNegativeIndex) {
  auto v = evalLast("graph @g() opset 17 {\n"
                    "  %a = Constant() {value = dense<i64[2]>[7, -7]} : i64[2]\n"
                    "  %b = Constant() {value = dense<i64[]>[2]} : i64[]\n"
                    "  %d = Div(%a, %b) : i64[2]\n"
                    "  %i = Constant() {value = dense<i64[1]>[-1]} : i64[1]\n"
                    "  %y = Gather(%d, %i) {axis = 0} : i64[1]\n  return %y\n}\n");
  EXPECT_EQ(v, (std::vector<double>{-3}));
}

TEST(ConstantEvaluator, ReduceMeanAndTrilu) {
  auto v = evalLast("graph @g() opset 17 {\n"
                    "  %x = Constant() {value = dense<f32[2,2]>[1.0, 2.0, 3.0, 4.0]} : f32[2,2]\n"
                    "  %t = Trilu(%x) {upper = 0} : f32[2,2]\n"
                    "  %y = ReduceMean(%t) {axes = [1], keepdims = 0} : f32[2]\n  return %y\n}\n");
  EXPECT_EQ(v, (std::vector<double>{0.5, 3.5})); // rows [1,0] and [3,4]
}
