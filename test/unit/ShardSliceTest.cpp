// partita.ShardSlice taken at run time (ShardSliceKernel.cpp): each rank of
// the dp group gets block `its place in the group` of the dimension, in each
// of its `outer` blocks; two mock ranks on threads, against the index formula.
#include "ProgramOnRanks.h"
#include <gtest/gtest.h>

using namespace partita;
using namespace partita::rt;

TEST(ShardSlice, EachRankTakesItsBlockOfEveryOuterBlock) {
  // x: [2, 12, 3]; dim 1 is [outer 2][parts 2][part 3]: rank r takes
  // x[a, j*6 + r*3 + k, c] for j < 2, k < 3 as y[a, j*3 + k, c].
  const char *text = R"(graph @g(%x: f32[2,12,3]) opset 17 {
  %y = partita.ShardSlice(%x) {axis = "dp", dim = 1, outer = 2, parts = 2} : f32[2,6,3]
  return %y
})";
  std::vector<float> x(2 * 12 * 3);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = static_cast<float>(i);
  test::runProgramOnRanks(2, text, "dp", [&](int rank, Program &p, const test::Fail &fail) {
    llvm::StringMap<TensorView> feeds;
    feeds["x"] = TensorView{DType::F32, {2, 12, 3}, x.data()};
    auto outs = p.run(feeds);
    if (!outs)
      return fail(llvm::toString(outs.takeError()));
    const float *y = (*outs)[0].as<float>();
    for (int a = 0; a < 2; ++a)
      for (int j = 0; j < 2; ++j)
        for (int k = 0; k < 3; ++k)
          for (int c = 0; c < 3; ++c) {
            float want = x[(a * 12 + j * 6 + rank * 3 + k) * 3 + c], got = y[(a * 6 + j * 3 + k) * 3 + c];
            if (got != want)
              fail("y[" + std::to_string(a) + "," + std::to_string(j * 3 + k) + "," + std::to_string(c) + "] = " +
                   std::to_string(got) + ", want " + std::to_string(want));
          }
  });
}

TEST(ShardSlice, RefusesAGroupOfAnotherSize) {
  const char *text = R"(graph @g(%x: f32[8]) opset 17 {
  %y = partita.ShardSlice(%x) {axis = "dp", dim = 0, parts = 4} : f32[2]
  return %y
})";
  test::runProgramOnRanks(2, text, "dp", [&](int, Program &p, const test::Fail &fail) {
    std::vector<float> x(8);
    llvm::StringMap<TensorView> feeds;
    feeds["x"] = TensorView{DType::F32, {8}, x.data()};
    auto outs = p.run(feeds);
    if (outs)
      return fail("ran with a group of another size");
    std::string err = llvm::toString(outs.takeError());
    if (err.find("group 'dp' has 2 ranks, the program was compiled for 4") == std::string::npos)
      fail("error: " + err);
  });
}
