// partita plan's pieces against formulas worked out by hand: the pipeline
// simulation against the GPipe/1F1B step time (m + p - 1)(f + b), a product's
// and a collective's time against roofline and ring alpha-beta, the links
// each mesh axis crosses, and the machine file's checks.
#include "compiler/ir/Parser.h"
#include "planner/LayoutProfile.h"
#include "planner/Machine.h"
#include "planner/ProgramTime.h"
#include "planner/StepSimulation.h"
#include <gtest/gtest.h>

using namespace partita;
using namespace partita::planner;

namespace {
std::vector<StageTimes> equalStages(int p, int chunks, double f, double b) {
  std::vector<StageTimes> stages(p);
  for (StageTimes &s : stages)
    s.chunks.assign(chunks, ChunkTimes{f, b, 0, 0, 0});
  return stages;
}

Machine testMachine() {
  Machine m;
  m.matmulFlops = {{"fp32", 100e12}, {"bf16", 400e12}};
  m.vectorFlops = 10e12;
  m.transcendentalFlops = 2.5e12;
  m.memoryBandwidth = 2e12;
  m.matmulEfficiency = 0.5;
  m.bandwidthEfficiency = 1;
  m.kernelOverhead = 1e-6;
  m.devicesPerNode = 8;
  m.intraNode = Link{300e9, 5e-6, 0.75};
  m.interNode = Link{25e9, 10e-6, 1};
  return m;
}
} // namespace

// Every stage equally fast, free sends: GPipe and 1F1B take (m + p - 1)(f + b)
// (the bubble is (p - 1) / (m + p - 1) of it, Narayanan et al. 2021, eq. 1).
TEST(StepSimulation, GPipeAndOneFOneBMatchTheBubbleFormula) {
  for (rt::PipelineKind kind : {rt::PipelineKind::GPipe, rt::PipelineKind::OneFOneB})
    for (int p : {1, 2, 4})
      for (int m : {1, 4, 8}) {
        SimulatedStep s = simulateStep(equalStages(p, 1, 1.0, 2.0), kind, m);
        EXPECT_NEAR(s.seconds, (m + p - 1) * 3.0, 1e-9) << "p=" << p << " m=" << m;
        EXPECT_NEAR(s.bubble(), static_cast<double>(p - 1) / (m + p - 1), 1e-9);
      }
}

// Interleaved 1F1B with V chunks of 1/V of a stage each: the bubble shrinks
// to (p - 1)/V stage-times: m(f + b) + (p - 1)(f + b)/V (eq. 2 of the paper).
TEST(StepSimulation, InterleavedShrinksTheBubbleByTheChunks) {
  for (int p : {2, 4})
    for (int v : {2, 4}) {
      const int m = 2 * p;
      SimulatedStep s = simulateStep(equalStages(p, v, 1.0 / v, 2.0 / v), rt::PipelineKind::OneFOneB, m);
      EXPECT_NEAR(s.seconds, m * 3.0 + (p - 1) * 3.0 / v, 1e-9) << "p=" << p << " v=" << v;
    }
}

// A send adds its time on the critical path once per stage boundary each
// way, and the tail comes after the last backward.
TEST(StepSimulation, SendsAndTailLengthenTheStep) {
  std::vector<StageTimes> stages = equalStages(2, 1, 1.0, 2.0);
  for (StageTimes &s : stages) {
    s.chunks[0].sendForward = s.chunks[0].sendBackward = 0.5;
    s.tail = 0.25;
  }
  // One micro-batch: F0, send, F1, B1, send, B0, tail.
  EXPECT_NEAR(simulateStep(stages, rt::PipelineKind::OneFOneB, 1).seconds, 1 + 0.5 + 1 + 2 + 0.5 + 2 + 0.25, 1e-9);
}

// What a backward does after its input gradient left (the gradient sums, a
// reduction's tail) holds its own rank, not the stage before.
TEST(StepSimulation, WorkAfterTheSendDelaysOnlyItsRank) {
  std::vector<StageTimes> stages = equalStages(2, 1, 1.0, 2.0);
  stages[1].chunks[0].afterSend = 0.5; // stage 1's backward sends at 1.5 of its 2
  // F0 1, F1 1, B1's send at 1.5, B0 2: 5.5 (not 6); stage 1 ends at 4 (1 + 1 + 2).
  EXPECT_NEAR(simulateStep(stages, rt::PipelineKind::OneFOneB, 1).seconds, 5.5, 1e-9);
  stages[1].chunks[0].lastBackwardExtra = 3; // after the send as well: stage 1 now ends last, at 7
  EXPECT_NEAR(simulateStep(stages, rt::PipelineKind::OneFOneB, 1).seconds, 7.0, 1e-9);
}

TEST(ProgramTime, ProductsAndCollectivesFollowRooflineAndRing) {
  auto g = parseGraph("graph @g(%x: f32[512,1024], %w: bf16[1024,4096]) opset 17 mesh<tp=4> {\n"
                      "  %xh = Cast(%x) {to = 16} : bf16[512,1024]\n"
                      "  %xw = Cast(%xh) {to = 1} : f32[512,1024]\n"
                      "  %ww = Cast(%w) {to = 1} : f32[1024,4096]\n"
                      "  %y = MatMul(%xw, %ww) : f32[512,4096]\n"
                      "  %r = partita.AllReduce(%y) {axis = \"tp\", parts = 4} : f32[512,4096]\n"
                      "  return %r\n}\n",
                      "t.pir");
  ASSERT_TRUE(static_cast<bool>(g)) << llvm::toString(g.takeError());
  Machine m = testMachine();
  Mesh mesh;
  mesh.axes.push_back(MeshAxis{"tp", 4});
  AxisLinks links(mesh, m);
  ProgramTime t = programTime(**g, m, links);
  // The product reads both operands as bf16 (the widening casts fold into a
  // half GEMM): 2MNK at the bf16 rate x efficiency, against its bytes.
  const double flops = 2.0 * 512 * 1024 * 4096;
  const double bytes = 4.0 * (512 * 1024 + 1024 * 4096 + 512 * 4096); // the node's f32 operands and result
  EXPECT_DOUBLE_EQ(t.productFlops, flops);
  const double product = std::max(flops / (400e12 * 0.5), bytes / 2e12) + 1e-6;
  // The narrowing cast: one pass, its input read and output written (f32 in, bf16 out).
  const double narrow = std::max(512.0 * 1024 / 10e12, (4.0 + 2.0) * 512 * 1024 / 2e12) + 1e-6;
  EXPECT_NEAR(t.compute, product + narrow, 1e-12);
  // Ring all-reduce of 8 MB over 4 ranks in a node: 2(n-1) latencies, 2(n-1)/n of the buffer at 75% of 300 GB/s.
  const double buffer = 4.0 * 512 * 4096;
  EXPECT_NEAR(t.collectiveTime("tp"), 6 * 5e-6 + 1.5 * buffer / (300e9 * 0.75), 1e-12);
  EXPECT_NEAR(t.reductionTime("tp"), t.collectiveTime("tp"), 1e-15);
}

// A backward sends its input's gradient as soon as it has it: the products
// after the send in the program's order (the weights' gradients) are what
// runs while the previous stage goes on, and nothing counts before it.
TEST(ProgramTime, WhatFollowsTheLastSendIsItsOwn) {
  auto g = parseGraph("graph @b(%dy: f32[512,1024], %x: f32[512,1024], %w: f32[1024,1024]) opset 17 {\n"
                      "  %wt = Transpose(%w) {perm = [1, 0]} : f32[1024,1024]\n"
                      "  %dx = MatMul(%dy, %wt) : f32[512,1024]\n"
                      "  %t = partita.Send(%dx) {peer = 0} : f32[0]\n"
                      "  %xt = Transpose(%x) {perm = [1, 0]} : f32[1024,512]\n"
                      "  %dw = MatMul(%xt, %dy) : f32[1024,1024]\n"
                      "  %dw2 = MatMul(%xt, %dx) : f32[1024,1024]\n"
                      "  return %dw, %dw2\n}\n",
                      "b.pir");
  ASSERT_TRUE(static_cast<bool>(g)) << llvm::toString(g.takeError());
  Machine m = testMachine();
  AxisLinks links(Mesh(), m);
  ProgramTime t = programTime(**g, m, links);
  const double product = std::max(2.0 * 512 * 1024 * 1024 / (100e12 * 0.5),
                                   4.0 * (2 * 512 * 1024 + 1024 * 1024) / 2e12) + 1e-6; // each of the three
  EXPECT_NEAR(t.compute, 3 * product, 1e-12);
  EXPECT_NEAR(t.computeAfterSend, 2 * product, 1e-12);
  EXPECT_DOUBLE_EQ(t.sendBytes, 4.0 * 512 * 1024);
}

// Ranks are laid out tp fastest: with 8 devices a node, tp 4 and dp 2 stay
// within a node, pp 2 spans two.
TEST(ProgramTime, AxesCrossTheLinkTheirRanksSpan) {
  Machine m = testMachine();
  Mesh mesh;
  mesh.axes.push_back(MeshAxis{"pp", 2});
  mesh.axes.push_back(MeshAxis{"dp", 2});
  mesh.axes.push_back(MeshAxis{"tp", 4});
  AxisLinks links(mesh, m);
  EXPECT_TRUE(links.withinNode("tp"));
  EXPECT_TRUE(links.withinNode("dp"));
  EXPECT_FALSE(links.withinNode("pp"));
  EXPECT_EQ(&links.link("pp"), &m.interNode);
  m.devicesPerNode = 4;
  AxisLinks smaller(mesh, m);
  EXPECT_FALSE(smaller.withinNode("dp"));
}

TEST(Machine, BundledDescriptionsLoadAndBadOnesSayWhy) {
  for (const std::string &name : bundledMachines()) {
    auto m = loadMachine(name);
    ASSERT_TRUE(static_cast<bool>(m)) << name << ": " << llvm::toString(m.takeError());
    EXPECT_GT(m->matmulRate(DType::BF16), m->matmulRate(DType::F32)) << name;
    EXPECT_FALSE(m->sources.empty()) << name;
  }
  auto a100 = loadMachine("a100-80gb");
  ASSERT_TRUE(static_cast<bool>(a100));
  EXPECT_DOUBLE_EQ(a100->matmulFlops.at("bf16"), 312e12); // the datasheet's dense figure
  EXPECT_EQ(a100->devicesPerNode, 8);
  auto expectError = [](llvm::StringRef json, llvm::StringRef says) {
    auto m = parseMachine(json, "m.json");
    ASSERT_FALSE(static_cast<bool>(m));
    std::string msg = llvm::toString(m.takeError());
    EXPECT_NE(msg.find(says.str()), std::string::npos) << msg;
    EXPECT_NE(msg.find("m.json"), std::string::npos) << msg;
  };
  expectError("{", "not JSON");
  expectError("{\"device\": {}}", "memory_bytes");
  const char *good = "\"memory_bytes\": 1e9, \"vector_flops\": 1e9, \"memory_bandwidth\": 1e9";
  expectError(std::string("{\"device\": {") + good + "}}", "matmul_flops");
  expectError(std::string("{\"device\": {") + good + ", \"matmul_flops\": {\"fp32\": 1e9}}}", "devices_per_node");
  expectError(std::string("{\"device\": {") + good +
                  ", \"matmul_flops\": {\"fp32\": 1e9}}, \"devices_per_node\": 1, \"intra_node\": {\"bandwidth\": 1, "
                  "\"latency\": 1, \"efficiency\": 2}, \"inter_node\": {\"bandwidth\": 1, \"latency\": 1}}",
              "at most 1");
  expectError(std::string("{\"device\": {") + good + ", \"collective_overlap\": 1.5, \"matmul_flops\": {\"fp32\": 1e9}}}",
              "collective_overlap");
  EXPECT_DOUBLE_EQ(a100->collectiveOverlap, 1); // a datasheet's: nothing says otherwise
  auto missing = loadMachine("no-such-machine");
  ASSERT_FALSE(static_cast<bool>(missing));
  EXPECT_NE(llvm::toString(missing.takeError()).find("a100-80gb"), std::string::npos);
}

// A measured link (--calibrate) reaches a different bus bandwidth at each
// size: its table, interpolated in log(size) and held at the ends, survives
// the JSON round trip; a datasheet link has one rate. Worked by hand.
TEST(Machine, MeasuredLinksFollowTheirTableBySize) {
  Link datasheet{100e9, 5e-6, 0.8, {}};
  EXPECT_DOUBLE_EQ(datasheet.rate(1), 80e9);
  EXPECT_DOUBLE_EQ(datasheet.rate(1e12), 80e9);
  Link measured{4e9, 2e-6, 1, {{1e6, 10e9}, {1e8, 4e9}}};
  EXPECT_DOUBLE_EQ(measured.rate(1e6), 10e9);
  EXPECT_DOUBLE_EQ(measured.rate(1e8), 4e9);
  EXPECT_NEAR(measured.rate(1e7), 7e9, 1e-3);  // halfway in log(size)
  EXPECT_DOUBLE_EQ(measured.rate(1e3), 10e9);  // held below the table
  EXPECT_DOUBLE_EQ(measured.rate(1e10), 4e9);  // and above it
  EXPECT_NEAR(measured.time(1e7, 2), 2 * 2e-6 + 1e7 / 7e9, 1e-15);
  EXPECT_DOUBLE_EQ(measured.time(0, 3), 3 * 2e-6);

  auto a100 = loadMachine("a100-80gb");
  ASSERT_TRUE(static_cast<bool>(a100));
  a100->intraNode = measured;
  auto back = parseMachine(machineJson(*a100), "round trip");
  ASSERT_TRUE(static_cast<bool>(back)) << llvm::toString(back.takeError());
  EXPECT_EQ(back->intraNode.measured, measured.measured);
  EXPECT_TRUE(back->interNode.measured.empty());

  a100->intraNode.measured = {{1e6, 10e9}, {1e5, 4e9}}; // the second size below the first
  auto bad = parseMachine(machineJson(*a100), "m.json");
  ASSERT_FALSE(static_cast<bool>(bad));
  EXPECT_NE(llvm::toString(bad.takeError()).find("the sizes must increase"), std::string::npos);
}

// A product of half values seen through a reshape runs as a half GEMM where
// the machine's GEMM reads the view (a GPU library), in float32 where it
// does not (Partita's CPU runtime).
TEST(ProgramTime, HalfOperandsThroughReshapesFollowTheMachine) {
  auto g = parseGraph("graph @g(%x: bf16[4,128,1024], %w: bf16[1024,1024]) opset 17 {\n"
                      "  %xw = Cast(%x) {to = 1} : f32[4,128,1024]\n"
                      "  %shape = Constant() {value = dense<i64[2]>[512, 1024]} : i64[2]\n"
                      "  %x2 = Reshape(%xw, %shape) : f32[512,1024]\n"
                      "  %ww = Cast(%w) {to = 1} : f32[1024,1024]\n"
                      "  %y = MatMul(%x2, %ww) : f32[512,1024]\n"
                      "  return %y\n}\n",
                      "t.pir");
  ASSERT_TRUE(static_cast<bool>(g)) << llvm::toString(g.takeError());
  Machine m = testMachine();
  m.memoryBandwidth = 1e18; // the products' arithmetic alone
  m.kernelOverhead = 0;
  Mesh mesh;
  AxisLinks links(mesh, m);
  const double flops = 2.0 * 512 * 1024 * 1024;
  // The widening read by the reshape is a real pass when the GEMM cannot take
  // the bf16 operand (its elements at the vector rate).
  EXPECT_NEAR(programTime(**g, m, links).compute, flops / (400e12 * 0.5), 1e-15);
  m.halfGemmThroughReshapes = false;
  EXPECT_NEAR(programTime(**g, m, links).compute, flops / (100e12 * 0.5) + 512.0 * 1024 / 10e12, 1e-15);
}

// A pipeline send crosses nodes only where its two stages lie on two nodes:
// 4 stages of one rank each, with 2 devices per node, send 0-1 and 2-3
// within a node and 1-2 across, so the step lies strictly between all four
// on one node and one per node (before, every boundary took the inter-node
// link once the pipeline spanned nodes: equal to one per node).
TEST(Prediction, PipelineSendsCrossNodesOnlyWhereTheirStagesDo) {
  Layout l;
  l.pp = 4, l.microBatches = 8, l.schedule = "1f1b";
  LayoutProfile profile;
  profile.layout = l;
  profile.stages.resize(4);
  for (StageProfile &st : profile.stages) {
    st.forward.resize(1), st.backward.resize(1);
    st.forward[0].compute = 1e-3, st.backward[0].compute = 2e-3;
    st.forward[0].sendBytes = st.backward[0].sendBytes = 50e6; // 2 ms over the slow link, 0.2 ms over the fast
  }
  auto stepWith = [&](int devicesPerNode) {
    Machine m = testMachine();
    m.devicesPerNode = devicesPerNode;
    m.intraNode = Link{250e9, 0, 1};
    m.interNode = Link{25e9, 0, 1};
    ProfileContext ctx;
    ctx.machine = &m;
    ctx.devices = 4;
    return predict(l, profile, ctx, 1e12, 8).stepSeconds;
  };
  const double oneNode = stepWith(4), pairs = stepWith(2), apart = stepWith(1);
  EXPECT_LT(oneNode, pairs);
  EXPECT_LT(pairs, apart);
}

// A gradient reduction of 100 MB in 25 MB buckets over dp 2 (10 ms on a 10
// GB/s link) beside a 50 ms backward: the machine hides the share
// collective_overlap of what the last bucket leaves, so the step is
// f + b + r - overlap * min(r - r/4, b).
TEST(Prediction, TheMachineHidesItsShareOfTheGradientReduction) {
  Layout one;
  one.microBatches = 1, one.schedule = "1f1b";
  LayoutProfile profile; // dp 1's, the class profile: the reduction by formula
  profile.layout = one;
  profile.stages.resize(1);
  StageProfile &st = profile.stages[0];
  st.forward.resize(1), st.backward.resize(1);
  st.forward[0].compute = 20e-3, st.backward[0].compute = 50e-3;
  st.gradientBytes = 100e6, st.gradientElements = 25e6;
  Layout l = one;
  l.dp = 2;
  for (double overlap : {0.0, 0.5, 1.0}) {
    Machine m = testMachine();
    m.intraNode = Link{10e9, 0, 1};
    m.collectiveOverlap = overlap;
    ProfileContext ctx;
    ctx.machine = &m;
    ctx.devices = 2;
    const double r = 2 * (2 - 1) / 2.0 * 100e6 / 10e9;
    EXPECT_NEAR(predict(l, profile, ctx, 1e12, 2).stepSeconds, 20e-3 + 50e-3 + r - overlap * std::min(r - r / 4, 50e-3),
                1e-9)
        << "overlap " << overlap;
  }
}

// Two stages, one micro-batch, forward 1 ms and backward 2 ms each: the last
// stage's backward sends its input's gradient after 1 ms when its weights'
// gradients (1 ms) follow the send, so the step is 1 + 1 + 1 + 2 = 5 ms, not
// the 6 of a send at its end.
TEST(Prediction, APipelineGoesOnWhileTheBackwardFinishesItsWeights) {
  Layout l;
  l.pp = 2, l.microBatches = 1, l.schedule = "1f1b";
  auto stepWith = [&](double afterSend) {
    LayoutProfile profile;
    profile.layout = l;
    profile.stages.resize(2);
    for (StageProfile &st : profile.stages) {
      st.forward.resize(1), st.backward.resize(1);
      st.forward[0].compute = 1e-3, st.backward[0].compute = 2e-3;
    }
    profile.stages[1].backward[0].computeAfterSend = afterSend;
    Machine m = testMachine();
    ProfileContext ctx;
    ctx.machine = &m;
    ctx.devices = 2;
    return predict(l, profile, ctx, 1e12, 1).stepSeconds;
  };
  EXPECT_NEAR(stepWith(0), 6e-3, 1e-12);
  EXPECT_NEAR(stepWith(1e-3), 5e-3, 1e-12);
}
