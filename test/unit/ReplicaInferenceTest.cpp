// Data-parallel inference (tools/ReplicaInference.h): which micro-batches each
// replica runs, and the gather that puts them back in order on replica 0,
// over 3 mock replicas, with outputs of two shapes and types.
#include "tools/ReplicaInference.h"
#include "MockCommunicator.h"
#include <gtest/gtest.h>
#include <memory>

using namespace partita;

namespace {

/// Micro-batch j's output o, as replica (j mod 3) makes it: f32 [2,3] holding
/// 10 j + k, and u8 [5] (a mask) holding j + k.
Tensor outputOf(size_t j, size_t o) {
  if (o == 0) {
    std::vector<double> v;
    for (int k = 0; k < 6; ++k)
      v.push_back(10.0 * static_cast<double>(j) + k);
    return Tensor::fromDoubles(DType::F32, {2, 3}, v);
  }
  std::vector<int64_t> v;
  for (int k = 0; k < 5; ++k)
    v.push_back(static_cast<int64_t>(j) + k);
  return Tensor::fromInts(DType::U8, {5}, v);
}

} // namespace

TEST(ReplicaInference, DealsTheBatchesRoundRobin) {
  EXPECT_EQ(replicaBatches(7, 0, 3), (std::vector<size_t>{0, 3, 6}));
  EXPECT_EQ(replicaBatches(7, 1, 3), (std::vector<size_t>{1, 4}));
  EXPECT_EQ(replicaBatches(7, 2, 3), (std::vector<size_t>{2, 5}));
  EXPECT_EQ(replicaBatches(1, 1, 2), std::vector<size_t>{}); // an idle replica
  EXPECT_EQ(replicaBatches(3, 0, 1), (std::vector<size_t>{0, 1, 2}));
}

TEST(ReplicaInference, GathersEveryMicroBatchInOrderOnReplicaZero) {
  for (size_t batches : {7u, 2u}) { // 2: replica 2 runs none
    test::MockWorld world(3);
    std::vector<std::vector<std::vector<Tensor>>> result(3);
    world.run([&](int rank, rt::Communicator &comm) {
      std::vector<std::vector<Tensor>> outs(2);
      for (size_t j : replicaBatches(batches, rank, 3))
        for (size_t o = 0; o < 2; ++o)
          outs[o].push_back(outputOf(j, o));
      llvm::Error err = gatherReplicaOutputs(&comm, batches, outs);
      EXPECT_FALSE(static_cast<bool>(err)) << llvm::toString(std::move(err));
      result[rank] = std::move(outs);
    });
    ASSERT_EQ(result[0].size(), 2u);
    for (size_t o = 0; o < 2; ++o) {
      ASSERT_EQ(result[0][o].size(), batches) << "output " << o;
      for (size_t j = 0; j < batches; ++j) {
        const Tensor &got = result[0][o][j], want = outputOf(j, o);
        EXPECT_EQ(got.dtype(), want.dtype());
        EXPECT_EQ(got.shape(), want.shape());
        for (int64_t k = 0; k < want.numel(); ++k)
          EXPECT_EQ(got.at(k), want.at(k)) << "micro-batch " << j << " output " << o << " element " << k;
      }
    }
    for (int r : {1, 2})
      for (const auto &out : result[r])
        EXPECT_TRUE(out.empty()) << "replica " << r << " keeps outputs";
  }
}
