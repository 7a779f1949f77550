#include "compiler/ir/Parser.h"
#include "compiler/ir/Printer.h"
#include "compiler/ir/Verifier.h"
#include <gtest/gtest.h>

using namespace partita;

static std::string print(const Graph &g) {
  std::string s;
  llvm::raw_string_ostream os(s);
  printGraph(g, os);
  return os.str();
}

TEST(Parser, FloatAttributesRoundTripExactly) {
  const char *text = "graph @g(%x: f32[2]) opset 17 {\n"
                     "  %y = LeakyRelu(%x) {alpha = 0.00999999978} : f32[2]\n"
                     "  %c = Constant() {value = dense<f32[3]>[0.1, -inf, 3.0e+38]} : f32[3]\n"
                     "  return %y, %c\n}\n";
  auto g = parseGraph(text, "t.pir");
  ASSERT_TRUE(static_cast<bool>(g)) << llvm::toString(g.takeError());
  std::string once = print(**g);
  auto again = parseGraph(once, "t2.pir");
  ASSERT_TRUE(static_cast<bool>(again));
  EXPECT_EQ(print(**again), once);
  // 0.1 is stored as the nearest float32 and printed so it re-reads as the same.
  EXPECT_NE(once.find("0.100000001"), std::string::npos) << once;
}

TEST(Parser, ErrorsCarryLineAndColumn) {
  auto g = parseGraph("graph @g(%x: f32[2]) opset 17 {\n  %y = Relu(%z) : f32[2]\n  return %y\n}\n",
                      "bad.pir");
  ASSERT_FALSE(static_cast<bool>(g));
  EXPECT_EQ(llvm::toString(g.takeError()), "bad.pir:2:13: use of undefined value %z");
}

TEST(Verifier, CatchesWrongDeclaredShape) {
  auto g = parseGraph("graph @g(%x: f32[2,3]) opset 17 {\n  %y = Transpose(%x) : f32[2,3]\n  return %y\n}\n",
                      "t.pir");
  ASSERT_TRUE(static_cast<bool>(g));
  EXPECT_EQ(llvm::toString(verifyGraph(**g)),
            "verifier: node '%y' (Transpose): result %y is declared f32[2,3] but inference gives f32[3,2]");
}
