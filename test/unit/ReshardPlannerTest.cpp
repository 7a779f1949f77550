//===- ReshardPlannerTest.cpp - the reshard planner on a dp x tp mesh -----===//
//
// Each conversion of the design's table (Partial->R all-reduce, S->R
// all-gather, Partial->S reduce-scatter, R->S local slice) on one axis of a
// 2-axis mesh, with the other axis's sharding left alone, and values sharded
// on both. Expectations come from the definitions: a collective over axis a
// runs among the ranks that differ only in their a coordinate (ranks are
// row-major, rank = dp * T + tp); all-gather multiplies the gathered local
// dimension by the axis size, reduce-scatter and slices divide it, all-reduce
// keeps it.
//===----------------------------------------------------------------------===//
#include "passes/sharding/ReshardPlanner.h"
#include <gtest/gtest.h>
#include <set>

using namespace partita;

namespace {

constexpr int64_t D = 2, T = 4; // distinct sizes, so a swapped axis shows

Mesh dpTp() {
  Mesh m;
  m.axes.push_back({"dp", D});
  m.axes.push_back({"tp", T});
  return m;
}

Sharding sh(std::vector<std::vector<std::string>> dims, std::vector<std::string> partial = {}, bool max = false) {
  Sharding s;
  for (auto &d : dims)
    s.dims.emplace_back(d.begin(), d.end());
  s.partial.assign(partial.begin(), partial.end());
  s.partialMax = max;
  return s;
}

int64_t sizeOf(llvm::StringRef axis) { return axis == "dp" ? D : T; }

/// A step, as expected: kind, dimension (-1 for all-reduce), axis.
struct Expect {
  CollectiveKind kind;
  int64_t dim;
  std::string axis;
};

/// Plans `from` -> `to` for a value of `shape` and checks the steps against
/// `want`, and each step's local shape against the collective's definition.
void expectPlan(const Sharding &from, const Sharding &to, llvm::ArrayRef<int64_t> shape,
                const std::vector<Expect> &want) {
  SCOPED_TRACE(from.str() + " -> " + to.str());
  auto steps = planReshard(from, to, shape.size());
  ASSERT_TRUE(static_cast<bool>(steps)) << llvm::toString(steps.takeError());
  ASSERT_EQ(steps->size(), want.size());
  Mesh mesh = dpTp();
  auto local = from.localShape(mesh, shape);
  for (size_t i = 0; i < want.size(); ++i) {
    const ReshardStep &s = (*steps)[i];
    EXPECT_EQ(s.kind, want[i].kind) << "step " << i;
    EXPECT_EQ(s.axis, want[i].axis) << "step " << i;
    if (want[i].kind != CollectiveKind::AllReduce)
      EXPECT_EQ(s.dim, want[i].dim) << "step " << i;
    EXPECT_FALSE(static_cast<bool>(s.result.verify(mesh, shape)));
    int64_t n = sizeOf(want[i].axis);
    switch (want[i].kind) {
    case CollectiveKind::AllGather: local[want[i].dim] *= n; break;
    case CollectiveKind::ReduceScatter:
    case CollectiveKind::ShardSlice: local[want[i].dim] /= n; break;
    case CollectiveKind::AllReduce: break;
    }
    EXPECT_EQ(s.result.localShape(mesh, shape), local) << "step " << i << " leaves " << s.result.str();
  }
  if (!steps->empty())
    EXPECT_EQ(steps->back().result, to);
  EXPECT_EQ(to.localShape(mesh, shape), local);
}

using K = CollectiveKind;

} // namespace

TEST(MeshGroups, RowMajorCoordinatesAndAxisGroups) {
  Mesh m = dpTp();
  for (int64_t r = 0; r < D * T; ++r) {
    int64_t dp = r / T, tp = r % T;
    EXPECT_EQ(m.coordinates(r), (llvm::SmallVector<int64_t, 4>{dp, tp}));
    EXPECT_EQ(m.rankOf({dp, tp}), r);
    llvm::SmallVector<int64_t, 8> tpGroup, dpGroup;
    for (int64_t t = 0; t < T; ++t)
      tpGroup.push_back(dp * T + t);
    for (int64_t d = 0; d < D; ++d)
      dpGroup.push_back(d * T + tp);
    EXPECT_EQ(m.group(r, "tp"), tpGroup) << "rank " << r;
    EXPECT_EQ(m.group(r, "dp"), dpGroup) << "rank " << r;
  }
  EXPECT_TRUE(m.group(0, "pp").empty());
}

// One axis converted, the other's split untouched.
TEST(ReshardPlanner, PartialToReplicatedIsAnAllReduceOverThatAxis) {
  expectPlan(sh({{"dp"}, {}}, {"tp"}), sh({{"dp"}, {}}), {8, 16}, {{K::AllReduce, -1, "tp"}});
  expectPlan(sh({{}, {"tp"}}, {"dp"}), sh({{}, {"tp"}}), {8, 16}, {{K::AllReduce, -1, "dp"}});
}

TEST(ReshardPlanner, PartialMaxToReplicatedReducesByMax) {
  auto steps = planReshard(sh({{"dp"}, {}}, {"tp"}, true), sh({{"dp"}, {}}), 2);
  ASSERT_TRUE(static_cast<bool>(steps));
  ASSERT_EQ(steps->size(), 1u);
  EXPECT_EQ((*steps)[0].kind, K::AllReduce);
  EXPECT_TRUE((*steps)[0].max);
  EXPECT_EQ((*steps)[0].axis, "tp");
}

TEST(ReshardPlanner, ShardToReplicatedIsAnAllGatherOverThatAxis) {
  expectPlan(sh({{"dp"}, {"tp"}}), sh({{"dp"}, {}}), {8, 16}, {{K::AllGather, 1, "tp"}});
  expectPlan(sh({{"dp"}, {"tp"}}), sh({{}, {"tp"}}), {8, 16}, {{K::AllGather, 0, "dp"}});
}

TEST(ReshardPlanner, PartialToShardIsAReduceScatterOverThatAxis) {
  expectPlan(sh({{}, {"tp"}}, {"dp"}), sh({{"dp"}, {"tp"}}), {8, 16}, {{K::ReduceScatter, 0, "dp"}});
  expectPlan(sh({{"dp"}, {}}, {"tp"}), sh({{"dp"}, {"tp"}}), {8, 16}, {{K::ReduceScatter, 1, "tp"}});
}

TEST(ReshardPlanner, ReplicatedToShardIsALocalSlice) {
  expectPlan(sh({{"dp"}, {}}), sh({{"dp"}, {"tp"}}), {8, 16}, {{K::ShardSlice, 1, "tp"}});
  expectPlan(sh({{}, {"tp"}}, {"dp"}), sh({{}, {"tp"}}, {"dp"}), {8, 16}, {});
  expectPlan(sh({{}, {"tp"}}), sh({{"dp"}, {"tp"}}), {8, 16}, {{K::ShardSlice, 0, "dp"}});
}

TEST(ReshardPlanner, ShardMovedAlongOneAxisGathersThenSlices) {
  expectPlan(sh({{"dp"}, {"tp"}, {}}), sh({{"dp"}, {}, {"tp"}}), {8, 16, 8},
             {{K::AllGather, 1, "tp"}, {K::ShardSlice, 2, "tp"}});
}

// Both axes at once.
TEST(ReshardPlanner, ShardedOnBothAxesToReplicatedGathersBoth) {
  auto steps = planReshard(sh({{"dp"}, {"tp"}}), sh({{}, {}}), 2);
  ASSERT_TRUE(static_cast<bool>(steps));
  std::set<std::pair<int64_t, std::string>> gathers;
  for (const ReshardStep &s : *steps) {
    EXPECT_EQ(s.kind, K::AllGather);
    gathers.insert({s.dim, s.axis});
  }
  EXPECT_EQ(gathers, (std::set<std::pair<int64_t, std::string>>{{0, "dp"}, {1, "tp"}}));
  EXPECT_TRUE(steps->back().result.isReplicated());
}

TEST(ReshardPlanner, ReducesBeforeGathering) {
  // The all-reduce runs on the smaller, still split value.
  expectPlan(sh({{}, {"tp"}}, {"dp"}), sh({{}, {}}), {8, 16}, {{K::AllReduce, -1, "dp"}, {K::AllGather, 1, "tp"}});
}

TEST(ReshardPlanner, SlicesBeforeReducing) {
  // The free slice first shrinks what the all-reduce moves.
  expectPlan(sh({{}, {}}, {"dp"}), sh({{}, {"tp"}}), {8, 16}, {{K::ShardSlice, 1, "tp"}, {K::AllReduce, -1, "dp"}});
}

TEST(ReshardPlanner, PartialOverBothToShardedOverBothReduceScattersEach) {
  expectPlan(sh({{}, {}}, {"dp", "tp"}), sh({{"dp"}, {"tp"}}), {8, 16},
             {{K::ReduceScatter, 0, "dp"}, {K::ReduceScatter, 1, "tp"}});
}

TEST(ReshardPlanner, OneDimensionSplitOverBothAxesRunsMinorToMajor) {
  // {S(dp,tp)}: block dp*T+tp. The tp blocks of one dp are contiguous, so tp
  // is gathered first, then dp; slices add dp (major) before tp.
  expectPlan(sh({{"dp", "tp"}}), sh({{}}), {16}, {{K::AllGather, 0, "tp"}, {K::AllGather, 0, "dp"}});
  expectPlan(sh({{}}), sh({{"dp", "tp"}}), {16}, {{K::ShardSlice, 0, "dp"}, {K::ShardSlice, 0, "tp"}});
  expectPlan(sh({{"dp", "tp"}}), sh({{"dp"}}), {16}, {{K::AllGather, 0, "tp"}});
  // {S(tp,dp)} -> {S(dp,tp)}: the order differs, so both are gathered and sliced again.
  expectPlan(sh({{"tp", "dp"}}), sh({{"dp", "tp"}}), {16},
             {{K::AllGather, 0, "dp"}, {K::AllGather, 0, "tp"}, {K::ShardSlice, 0, "dp"}, {K::ShardSlice, 0, "tp"}});
}

TEST(ReshardPlanner, PartialNeverCreated) {
  auto steps = planReshard(sh({{"dp"}, {}}), sh({{"dp"}, {}}, {"tp"}), 2);
  ASSERT_FALSE(static_cast<bool>(steps));
  EXPECT_EQ(llvm::toString(steps.takeError()),
            "no reshard from {S(dp),R} to {S(dp),R} partial(tp) (a partial sum or max cannot be created by "
            "communication)");
  auto kinds = planReshard(sh({{}}, {"tp"}), sh({{}}, {"tp"}, true), 1);
  ASSERT_FALSE(static_cast<bool>(kinds));
  llvm::consumeError(kinds.takeError());
}

// The one-axis form keeps today's table.
TEST(ReshardPlanner, OneAxisTable) {
  auto plan = [](Layout from, Layout to) {
    auto steps = planReshard(from, to);
    EXPECT_TRUE(static_cast<bool>(steps));
    std::vector<std::pair<K, int64_t>> out;
    for (const ReshardStep &s : *steps) {
      EXPECT_TRUE(s.axis.empty());
      out.push_back({s.kind, s.kind == K::AllReduce ? -1 : s.dim});
    }
    return out;
  };
  using V = std::vector<std::pair<K, int64_t>>;
  EXPECT_EQ(plan(Layout::partialSum(), Layout::replicated()), (V{{K::AllReduce, -1}}));
  EXPECT_EQ(plan(Layout::split(1), Layout::replicated()), (V{{K::AllGather, 1}}));
  EXPECT_EQ(plan(Layout::partialSum(), Layout::split(0)), (V{{K::ReduceScatter, 0}}));
  EXPECT_EQ(plan(Layout::replicated(), Layout::split(2)), (V{{K::ShardSlice, 2}}));
  EXPECT_EQ(plan(Layout::split(0), Layout::split(1)), (V{{K::AllGather, 0}, {K::ShardSlice, 1}}));
  EXPECT_EQ(plan(Layout::partialMax(), Layout::split(1)), (V{{K::AllReduce, -1}, {K::ShardSlice, 1}}));
  EXPECT_EQ(plan(Layout::split(1), Layout::split(1)), V{});
  EXPECT_FALSE(static_cast<bool>(planReshard(Layout::replicated(), Layout::partialSum())));
  llvm::consumeError(planReshard(Layout::replicated(), Layout::partialSum()).takeError());
}
