//===- StatePlacementTest.cpp - every rank's saved pieces, put together ----===//
//
// Over every rank of a compiled training plan, the pieces the TrainState
// marks for saving (each rank's weights, masters and moments, as big as the
// programs hold them: the shard, or ZeRO's ceil(n / dp) part of it) hold
// each element of each whole tensor exactly once, counted element by element
// (StateBoxReference.h). A writer rule that saved a replica's copy, or left
// a ZeRO part or a tp shard out, fails here; so does a piece placed off its
// shard. Layouts: tp x dp with ZeRO-1, ZeRO-3 and bf16 masters, a pipeline
// holding a tied embedding twice, a fused q/k/v projection split by tp.
//===----------------------------------------------------------------------===//
#include "StateBoxReference.h"
#include "driver/Compile.h"
#include "runtime/core/DeviceRegistry.h"
#include "runtime/train/TrainState.h"
#include "llvm/Support/FileSystem.h"
#include <gtest/gtest.h>
#include <map>

using namespace partita;
using namespace partita::rt;

namespace {

Plan compiled(const std::string &fixture, int tp, int pp, int dp, int zero, const std::string &precision) {
  CompileOptions o;
  o.model = std::string(PARTITA_SOURCE_DIR) + "/models/fixtures/" + fixture + ".onnx";
  o.tp = tp;
  o.pp = pp;
  o.dp = dp;
  o.zero = zero;
  o.train = true;
  o.precision = precision;
  auto c = compileModel(o);
  EXPECT_TRUE(static_cast<bool>(c)) << (c ? "" : llvm::toString(c.takeError()));
  llvm::SmallString<128> dir;
  EXPECT_FALSE(llvm::sys::fs::createUniqueDirectory("partita-placement", dir));
  std::string out = dir.str().str() + "/out";
  llvm::Error err = writeCompiledPlan(*c, out);
  EXPECT_FALSE(static_cast<bool>(err)) << llvm::toString(std::move(err));
  auto plan = readPlan(out + "/plan.json");
  EXPECT_TRUE(static_cast<bool>(plan));
  llvm::sys::fs::remove_directories(dir);
  return std::move(*plan);
}

void expectTiled(const Plan &plan, const char *layout) {
  const MeshAxis *dpAxis = plan.mesh.find(mesh_axis::kData);
  const int64_t dp = dpAxis ? dpAxis->size : 1;
  // (tensor, kind) -> how often each element was saved
  std::map<std::pair<std::string, std::string>, std::pair<Shape, std::vector<int>>> saved;
  size_t pieces = 0;
  for (const RankPlan &r : plan.ranks) {
    CpuDevice cpu;
    TrainState state(plan, r.coords, cpu);
    int64_t pp = r.coords.count(mesh_axis::kPipeline) ? r.coords.at(mesh_axis::kPipeline) : 0;
    for (size_t i = 0; i < plan.params.size(); ++i) {
      if (!plan.paramStages.empty() && plan.paramStages[i] % plan.stages() != pp)
        continue; // another stage's
      const TensorType &shard = plan.paramTypes[i];
      int64_t n = shard.numel(), part = (n + dp - 1) / dp;
      bool partitioned = i < plan.paramPartitioned.size() && plan.paramPartitioned[i];
      ASSERT_FALSE(static_cast<bool>(state.add(i, StateKind::Weight, TensorView{shard.dtype, {partitioned ? part : n}})));
      for (StateKind m : {StateKind::Moment1, StateKind::Moment2})
        ASSERT_FALSE(static_cast<bool>(state.add(i, m, TensorView{DType::F32, {plan.zero >= 1 ? part : n}})));
    }
    for (const StateTensor &t : state.tensors()) {
      if (!t.writer)
        continue;
      auto &[whole, count] = saved[{t.name, stateKindName(t.kind)}];
      if (count.empty()) {
        whole = t.whole;
        count.assign(static_cast<size_t>(numElements(whole)), 0);
      }
      ASSERT_EQ(whole, t.whole) << layout << ": " << t.name << " on rank " << r.rank;
      for (int64_t k = 0; k < t.box.numel(); ++k)
        ++count[static_cast<size_t>(partita::rt::testing::globalIndex(t.box, whole, k))];
      ++pieces;
    }
  }
  EXPECT_GT(pieces, saved.size()) << layout << ": the tensors are in pieces";
  for (const auto &[key, value] : saved)
    for (size_t e = 0; e < value.second.size(); ++e)
      ASSERT_EQ(value.second[e], 1) << layout << ": element " << e << " of " << key.first << " (" << key.second
                                    << ") saved " << value.second[e] << " times";
}

} // namespace

TEST(StatePlacement, EveryElementIsSavedOnce) {
  expectTiled(compiled("gpt_separate_untied_op17_static", 2, 1, 2, 1, "fp32"), "tp2 dp2 zero1");
  expectTiled(compiled("gpt_separate_untied_op17_static", 2, 1, 2, 3, "bf16"), "tp2 dp2 zero3 bf16");
  expectTiled(compiled("gpt_fused_tied_op17_static", 2, 2, 2, 2, "fp32"), "fused tied tp2 pp2 dp2 zero2");
}

// The TrainState owns the moments it allocates: zeros in the device's memory
// (cpu-strict: apart from the host's, read back by a copy), charged to its
// ledger as optimizer states while the state lives and released with it, and
// registered as the moment of that parameter at the same place a registered
// buffer of that size would be.
TEST(StatePlacement, TheStateOwnsTheMomentsItAllocates) {
  Plan plan = compiled("gpt_separate_untied_op17_static", 2, 1, 1, 0, "fp32");
  auto device = std::move(*DeviceRegistry::get().create("cpu-strict"));
  const TensorType &shard = plan.paramTypes[0];
  const size_t bytes = static_cast<size_t>(shard.numel()) * sizeof(float);
  size_t before = device->ledger().current()[static_cast<size_t>(MemoryCategory::OptimizerStates)];
  {
    TrainState state(plan, plan.ranks[1].coords, *device);
    auto m = state.allocate(0, StateKind::Moment2, TensorType{DType::F32, shard.shape});
    ASSERT_TRUE(static_cast<bool>(m)) << llvm::toString(m.takeError());
    EXPECT_EQ(device->ledger().current()[static_cast<size_t>(MemoryCategory::OptimizerStates)] - before, bytes);
    std::vector<float> host(static_cast<size_t>(shard.numel()), 1.0f);
    device->copyToHost(host.data(), m->data, bytes);
    EXPECT_EQ(host, std::vector<float>(host.size(), 0.0f));
    TrainState registered(plan, plan.ranks[1].coords, *device);
    ASSERT_FALSE(static_cast<bool>(registered.add(0, StateKind::Moment2, *m)));
    ASSERT_EQ(state.tensors().size(), 1u);
    const StateTensor &owned = state.tensors()[0], &added = registered.tensors()[0];
    EXPECT_EQ(owned.kind, StateKind::Moment2);
    EXPECT_EQ(owned.name, plan.params[0]);
    EXPECT_EQ(owned.view.data, m->data);
    EXPECT_EQ(owned.whole, added.whole);
    EXPECT_EQ(owned.box.start, added.box.start);
    EXPECT_EQ(owned.box.extent, added.box.extent);
    EXPECT_EQ(owned.writer, added.writer);
  }
  EXPECT_EQ(device->ledger().current()[static_cast<size_t>(MemoryCategory::OptimizerStates)], before);
}
