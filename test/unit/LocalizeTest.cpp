//===- LocalizeTest.cpp - localize's weight shards on a dp x tp mesh ------===//
//
// Each rank's weight view starts at the block its coordinates index: rank k
// of mesh<dp=2, tp=2> is dp = k / 2, tp = k % 2; a dimension split over
// several axes is cut into blocks major to minor (S(dp,tp): block 2*dp + tp).
//===----------------------------------------------------------------------===//
#include "compiler/ir/Parser.h"
#include "compiler/pass/PassManager.h"
#include <gtest/gtest.h>

using namespace partita;

TEST(Localize, WeightShardsStartAtTheRanksBlock) {
  registerAllPasses();
  const char *text = "graph @g() opset 17 mesh<dp=2, tp=2> {\n"
                     "  %w = Weight() {name = \"w\"} : f32[8,8] {S(dp),S(tp)}\n"
                     "  %v = Weight() {name = \"v\"} : f32[16,8] {S(dp,tp),R}\n"
                     "  %u = Weight() {name = \"u\"} : f32[8,6] {R,S(tp)}\n"
                     "  return %w, %v, %u\n"
                     "}\n";
  for (int64_t rank = 0; rank < 4; ++rank) {
    int64_t dp = rank / 2, tp = rank % 2;
    for (std::string option : {"rank=" + std::to_string(rank),
                               "coords=dp:" + std::to_string(dp) + ",tp:" + std::to_string(tp)}) {
      SCOPED_TRACE(option);
      auto g = parseGraph(text, "g.pir");
      ASSERT_TRUE(static_cast<bool>(g)) << llvm::toString(g.takeError());
      PassManager pm;
      ASSERT_FALSE(static_cast<bool>(pm.addPipeline("localize{" + option + "}")));
      ASSERT_FALSE(static_cast<bool>(pm.run(**g)));
      const WeightRef *w = (*g)->weights.find("w#shard0.dp_1");
      const WeightRef *v = (*g)->weights.find("v#shard0.dp.tp");
      const WeightRef *u = (*g)->weights.find("u#shard1");
      ASSERT_TRUE(w && v && u);
      EXPECT_EQ(w->viewStart, (Shape{dp * 4, tp * 4}));
      EXPECT_EQ(w->type.shape, (Shape{4, 4}));
      EXPECT_EQ(v->viewStart, (Shape{(2 * dp + tp) * 4, 0}));
      EXPECT_EQ(v->type.shape, (Shape{4, 8}));
      EXPECT_EQ(u->viewStart, (Shape{0, tp * 3}));
    }
  }
}
