// Async reduce-scatters (ZeRO's gradient buckets, in flight while the
// backward goes on) pack their operands into scratch slots (Scratch.h): two
// slots of the largest bucket, not a buffer per bucket. A third bucket
// waits for the oldest to finish (DeepSpeed's double-buffered reduce
// bucket), and every result is still the formula's sum over ranks.
#include "ProgramOnRanks.h"
#include "compiler/ir/Graph.h"
#include <gtest/gtest.h>

using namespace partita;
using namespace partita::rt;

TEST(Scratch, ThreeAsyncBucketsShareTwoSlotsAndReduceToTheFormula) {
  const char *text = R"(graph @g(%a: f32[8], %b: f32[32], %c: f32[16]) opset 17 {
  %ga = partita.ReduceScatter(%a) {async = 1, axis = "dp", dim = 0, parts = 2} : f32[4]
  %gb = partita.ReduceScatter(%b) {async = 1, axis = "dp", dim = 0, parts = 2} : f32[16]
  %gc = partita.ReduceScatter(%c) {async = 1, axis = "dp", dim = 0, parts = 2} : f32[8]
  return %ga, %gb, %gc
})";
  const int64_t sizes[] = {8, 32, 16};
  // Operand k's element i on rank r.
  auto value = [](int r, int k, int64_t i) { return float((r + 1) * 1000 + k * 100 + i); };
  test::runProgramOnRanks(2, text, "dp", [&](int rank, Program &program, const test::Fail &fail) {
    Program *p = &program;
    // Two slots of the largest operand (32 floats: 128 bytes, two alignments).
    if (p->scratchBytes(MemoryCategory::Communication) != 2 * 128)
      fail("communication scratch " + std::to_string(p->scratchBytes(MemoryCategory::Communication)));
    if (p->kernelBytes(MemoryCategory::Communication) != 0)
      fail("the kernels keep " + std::to_string(p->kernelBytes(MemoryCategory::Communication)) + " bytes");
    // What happened in which order: a kernel ran ("run"), a collective finished (its output).
    std::vector<std::string> events;
    p->setAfterEachKernel([&] { events.push_back("run"); });
    p->setCollectiveObserver([&](const Node &n, auto, auto, auto) { events.push_back(n.output()->name()); });
    std::vector<std::vector<float>> in(3);
    llvm::StringMap<TensorView> feeds;
    const char *names[] = {"a", "b", "c"};
    for (int k = 0; k < 3; ++k) {
      for (int64_t i = 0; i < sizes[k]; ++i)
        in[k].push_back(value(rank, k, i));
      feeds[names[k]] = TensorView{DType::F32, {sizes[k]}, in[k].data()};
    }
    auto outs = p->run(feeds);
    if (!outs)
      return fail(llvm::toString(outs.takeError()));
    std::vector<std::string> want = {"run", "run", "ga", "run", "gb", "gc"};
    if (events != want) {
      std::string got;
      for (const std::string &e : events)
        got += e + " ";
      fail("events " + got);
    }
    for (int k = 0; k < 3; ++k) {
      int64_t half = sizes[k] / 2;
      for (int64_t i = 0; i < half; ++i) {
        float sum = value(0, k, rank * half + i) + value(1, k, rank * half + i);
        if ((*outs)[k].as<float>()[i] != sum)
          fail("result " + std::to_string(k) + "[" + std::to_string(i) + "] is " +
               std::to_string((*outs)[k].as<float>()[i]) + ", the formula " + std::to_string(sum));
      }
    }
  });
}
