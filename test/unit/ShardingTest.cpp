#include "compiler/ir/Sharding.h"
#include <gtest/gtest.h>

using namespace partita;

static Mesh mesh2x4() {
  Mesh m;
  m.axes.push_back({"dp", 2});
  m.axes.push_back({"tp", 4});
  return m;
}

TEST(Sharding, LocalShapeDividesSplitDims) {
  Sharding s;
  s.dims = {{}, {"tp"}, {"dp"}};
  EXPECT_EQ(s.localShape(mesh2x4(), {8, 64, 6}), (llvm::SmallVector<int64_t, 4>{8, 16, 3}));
  Sharding both;
  both.dims = {{"dp", "tp"}};
  EXPECT_EQ(both.localShape(mesh2x4(), {16}), (llvm::SmallVector<int64_t, 4>{2}));
}

TEST(Sharding, VerifyRejectsBadShardings) {
  Sharding s;
  s.dims = {{"tp"}, {"tp"}};
  EXPECT_EQ(llvm::toString(s.verify(mesh2x4(), {8, 8})),
            "sharding {S(tp),S(tp)} uses axis 'tp' more than once");
  Sharding t;
  t.dims = {{"pp"}};
  EXPECT_EQ(llvm::toString(t.verify(mesh2x4(), {8})),
            "sharding {S(pp)} names axis 'pp' which is not in mesh<dp=2, tp=4>");
  Sharding u;
  u.dims = {{"tp"}};
  EXPECT_EQ(llvm::toString(u.verify(mesh2x4(), {6})),
            "sharding {S(tp)} splits dimension 0 of size 6 into 4 parts, which does not divide");
  Sharding p;
  p.dims = {{"tp"}};
  p.partial = {"tp"};
  EXPECT_TRUE(static_cast<bool>(p.verify(mesh2x4(), {8}))) << "axis used as split and partial";
  Sharding ok;
  ok.dims = {{}, {"tp"}};
  ok.partial = {"dp"};
  EXPECT_FALSE(static_cast<bool>(ok.verify(mesh2x4(), {3, 8})));
  EXPECT_EQ(ok.str(), "{R,S(tp)} partial(dp)");
}
