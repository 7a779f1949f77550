#include "compiler/ir/Parser.h"
#include "passes/LayerStructure.h"
#include <gtest/gtest.h>

using namespace partita;

namespace {

std::vector<const Node *> forwardOf(const Graph &g) {
  std::vector<const Node *> out;
  for (const Node *n : g.nodes())
    if (!n->is("Weight") && !n->is("Constant"))
      out.push_back(n);
  return out;
}

std::vector<std::string> names(const std::vector<const Node *> &layer) {
  std::vector<std::string> out;
  for (const Node *n : layer)
    out.push_back(n->output()->name());
  return out;
}

} // namespace

// Parallel blocks (GPT-J's: x + attn(ln x) + mlp(ln x), here x + f(x) + g(x))
// are joined by one value each: a layer is one piece, the period 1. The
// embedding before and the head after belong to no layer; a mask made from
// an input and constants, read by every block, carries nothing and cuts nothing.
TEST(LayerStructure, ParallelBlocksRepeatWithPeriodOne) {
  std::string text = "graph @g(%ids: i64[2,8], %keep: f32[2,8,16]) opset 17 {\n"
                     "  %wte = Weight() {name = \"wte\"} : f32[50,16]\n"
                     "  %head = Weight() {name = \"head\"} : f32[16,50]\n"
                     "  %x0 = Gather(%wte, %ids) : f32[2,8,16]\n"
                     "  %mask = Relu(%keep) : f32[2,8,16]\n";
  for (int i = 0; i < 3; ++i) {
    std::string k = std::to_string(i), x = "%x" + k, next = "%x" + std::to_string(i + 1);
    text += "  %a" + k + " = Weight() {name = \"a" + k + "\"} : f32[16,16]\n" +
            "  %b" + k + " = Weight() {name = \"b" + k + "\"} : f32[16,16]\n" +
            "  %f" + k + " = MatMul(" + x + ", %a" + k + ") : f32[2,8,16]\n" +
            "  %m" + k + " = Mul(%f" + k + ", %mask) : f32[2,8,16]\n" +
            "  %g" + k + " = MatMul(" + x + ", %b" + k + ") : f32[2,8,16]\n" +
            "  %s" + k + " = Add(%m" + k + ", %g" + k + ") : f32[2,8,16]\n" +
            "  " + next + " = Add(" + x + ", %s" + k + ") : f32[2,8,16]\n";
  }
  text += "  %logits = MatMul(%x3, %head) : f32[2,8,50]\n  return %logits\n}\n";
  auto g = parseGraph(text, "t.pir");
  ASSERT_TRUE(static_cast<bool>(g)) << llvm::toString(g.takeError());
  auto layers = layersByStructure(forwardOf(**g));
  ASSERT_EQ(layers.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    std::string k = std::to_string(i);
    EXPECT_EQ(names(layers[i]), (std::vector<std::string>{"f" + k, "m" + k, "g" + k, "s" + k,
                                                          "x" + std::to_string(i + 1)}));
  }
}

// Two blocks of one kind, then a third of another: a single repeat of the
// first two is one period twice, so they are two layers and the third none.
// One block alone repeats nothing: no layers.
TEST(LayerStructure, NeedsTwoPeriods) {
  auto block = [](int i, const char *op) {
    std::string k = std::to_string(i);
    return "  %w" + k + " = Weight() {name = \"w" + k + "\"} : f32[16,16]\n" + "  %p" + k + " = MatMul(%x" + k +
           ", %w" + k + ") : f32[2,16]\n" + "  %q" + k + " = " + op + "(%p" + k + ") : f32[2,16]\n" + "  %x" +
           std::to_string(i + 1) + " = Add(%x" + k + ", %q" + k + ") : f32[2,16]\n";
  };
  std::string head = "graph @g(%in: f32[2,16]) opset 17 {\n  %e = Weight() {name = \"e\"} : f32[16,16]\n"
                     "  %x0 = MatMul(%in, %e) : f32[2,16]\n";
  auto three = parseGraph(head + block(0, "Relu") + block(1, "Relu") + block(2, "Tanh") + "  return %x3\n}\n", "a.pir");
  ASSERT_TRUE(static_cast<bool>(three)) << llvm::toString(three.takeError());
  auto layers = layersByStructure(forwardOf(**three));
  ASSERT_EQ(layers.size(), 2u);
  EXPECT_EQ(names(layers[1]), (std::vector<std::string>{"p1", "q1", "x2"}));
  auto one = parseGraph(head + block(0, "Relu") + "  return %x1\n}\n", "b.pir");
  ASSERT_TRUE(static_cast<bool>(one)) << llvm::toString(one.takeError());
  EXPECT_TRUE(layersByStructure(forwardOf(**one)).empty());
}
