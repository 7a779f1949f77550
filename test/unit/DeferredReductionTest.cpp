// Gradient accumulation under data parallelism on two ranks (threads, the
// mock communicator): the program's async bucket all-reduce over dp is
// deferred in micro-batches 1..M-1 (its results are the rank's own values:
// nothing was communicated) and the last micro-batch reduces the sum of all
// of them, which is the formula's sum over ranks and micro-batches.
#include "ProgramOnRanks.h"
#include "compiler/ir/Parser.h"
#include "runtime/comm/Communicator.h"
#include "runtime/core/Device.h"
#include "runtime/train/GradientAccumulator.h"
#include <gtest/gtest.h>
#include <mutex>

using namespace partita;
using namespace partita::rt;

TEST(DeferredReduction, OnlyTheLastMicroBatchCommunicatesAndItReducesTheSum) {
  const char *text = R"(graph @g(%x: f32[3]) opset 17 {
  %l = ReduceSum(%x) {keepdims = 0} : f32[]
  %loss, %grad.w = partita.AllReduce(%l, %x) {async = 1, axis = "dp", parts = 2} : f32[], f32[3]
  return %loss, %grad.w
})";
  const int64_t M = 3;
  // x on rank r in micro-batch m: (r + 1) * (m + 1) * {1, 10, 100}.
  auto x = [](int r, int64_t m, int k) { return float((r + 1) * (m + 1)) * (k == 0 ? 1.f : k == 1 ? 10.f : 100.f); };
  test::runProgramOnRanks(2, text, "dp", [&](int rank, Program &program, const test::Fail &fail) {
    Program *p = &program;
    if (!p->reducedAsync("grad.w") || !p->reducedAsync("loss"))
      return fail("the bucket's results are not async reductions");
    auto created = GradientAccumulator::create(p->device(), p, *p, {"grad.w"}, {3}, M);
    if (!created)
      return fail(llvm::toString(created.takeError()));
    GradientAccumulator &acc = **created;
    for (int64_t m = 0; m < M; ++m) {
      acc.beforeForward(m);
      acc.beforeBackward(m);
      std::vector<float> in = {x(rank, m, 0), x(rank, m, 1), x(rank, m, 2)};
      llvm::StringMap<TensorView> feeds;
      feeds["x"] = TensorView{DType::F32, {3}, in.data()};
      auto outs = p->run(feeds);
      if (!outs)
        return fail(llvm::toString(outs.takeError()));
      const float *gw = static_cast<const float *>((*outs)[1].data);
      if (m + 1 < M && gw[2] != in[2]) // deferred: this rank's own value
        fail("micro-batch " + std::to_string(m) + " was reduced: " + std::to_string(gw[2]));
      acc.afterLoss(m, *outs);
      acc.afterGradients(m, *outs);
    }
    // Sum over ranks (1 + 2) and micro-batches (1 + 2 + 3): 18 times {1, 10, 100}.
    for (int k = 0; k < 3; ++k)
      if (acc.gradient(0).as<float>()[k] != 18.f * (k == 0 ? 1.f : k == 1 ? 10.f : 100.f))
        fail("gradient " + std::to_string(k) + " is " + std::to_string(acc.gradient(0).as<float>()[k]));
    if (acc.lossSum() != 18.0 * 111)
      fail("loss sum is " + std::to_string(acc.lossSum()));
  });
}
