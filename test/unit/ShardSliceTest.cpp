// partita.ShardSlice taken at run time (ShardSliceKernel.cpp): each rank of
// the dp group gets block `its place in the group` of the dimension, in each
// of its `outer` blocks; two mock ranks on threads, against the index formula.
#include "MockCommunicator.h"
#include "compiler/ir/Parser.h"
#include "runtime/comm/Communicator.h"
#include "runtime/core/Device.h"
#include "runtime/executor/Program.h"
#include <gtest/gtest.h>
#include <mutex>

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
  std::mutex mu;
  std::vector<std::string> failures;
  test::MockWorld world(2);
  world.run([&](int rank, Communicator &comm) {
    auto fail = [&](const std::string &what) {
      std::lock_guard<std::mutex> lock(mu);
      failures.push_back("rank " + std::to_string(rank) + ": " + what);
    };
    auto g = parseGraph(text, "<test>");
    if (!g)
      return fail(llvm::toString(g.takeError()));
    RuntimeEnv env;
    env.groups["dp"] = &comm;
    CpuDevice device;
    auto p = Program::load(**g, device, &env);
    if (!p)
      return fail(llvm::toString(p.takeError()));
    llvm::StringMap<TensorView> feeds;
    feeds["x"] = TensorView{DType::F32, {2, 12, 3}, x.data()};
    auto outs = (*p)->run(feeds);
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
  for (const std::string &f : failures)
    ADD_FAILURE() << f;
}

TEST(ShardSlice, RefusesAGroupOfAnotherSize) {
  test::MockWorld world(2);
  world.run([&](int, Communicator &comm) {
    auto g = parseGraph(R"(graph @g(%x: f32[8]) opset 17 {
  %y = partita.ShardSlice(%x) {axis = "dp", dim = 0, parts = 4} : f32[2]
  return %y
})",
                        "<test>");
    ASSERT_TRUE(static_cast<bool>(g)) << llvm::toString(g.takeError());
    RuntimeEnv env;
    env.groups["dp"] = &comm;
    CpuDevice device;
    auto p = Program::load(**g, device, &env);
    ASSERT_TRUE(static_cast<bool>(p)) << llvm::toString(p.takeError());
    std::vector<float> x(8);
    llvm::StringMap<TensorView> feeds;
    feeds["x"] = TensorView{DType::F32, {8}, x.data()};
    auto outs = (*p)->run(feeds);
    ASSERT_FALSE(static_cast<bool>(outs));
    EXPECT_NE(llvm::toString(outs.takeError()).find("group 'dp' has 2 ranks, the program was compiled for 4"),
              std::string::npos);
  });
}
