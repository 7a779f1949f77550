// Gradient buckets and their sums over micro-batches (one replica: no
// communication).
#include "runtime/train/GradientReducer.h"
#include <gtest/gtest.h>

using namespace partita;
using namespace partita::rt;

namespace {
TensorView f32(std::vector<float> &v) { return TensorView{DType::F32, {static_cast<int64_t>(v.size())}, v.data()}; }
} // namespace

TEST(GradientReducer, BucketsFillInParameterOrderUpToTheirSize) {
  // 250 000 floats are 1 MB: with 2 MB buckets the first two share one, the
  // third (2 MB alone) starts another, the fourth joins it only if it fits.
  std::vector<float> a(250000), b(250000), c(500000), d(10);
  TensorView va = f32(a), vb = f32(b), vc = f32(c), vd = f32(d);
  GradientReducer r({&va, &vb, &vc, &vd}, nullptr, /*bucketMb=*/2, /*overlap=*/true);
  EXPECT_EQ(r.numBuckets(), 3u);
  EXPECT_EQ(r.bucketOf(0), 0u);
  EXPECT_EQ(r.bucketOf(1), 0u);
  EXPECT_EQ(r.bucketOf(2), 1u);
  EXPECT_EQ(r.bucketOf(3), 2u);
  EXPECT_EQ(r.gradient(1), r.gradient(0) + 250000); // contiguous inside a bucket
  EXPECT_FALSE(r.reducing());
  EXPECT_FALSE(r.overlapsBackward(true));
}

TEST(GradientReducer, SumsMicroBatchesAndForgetsThePreviousStep) {
  std::vector<float> p(3);
  TensorView vp = f32(p);
  GradientReducer r({&vp}, nullptr, 25, true);
  std::vector<float> g1 = {1, 2, 3}, g2 = {10, 20, 30}, g3 = {100, 200, 300};
  r.beginStep();
  r.add(0, f32(g1), false);
  r.add(0, f32(g2), false);
  r.add(0, f32(g3), true);
  ASSERT_FALSE(llvm::errorToBool(r.finish()));
  EXPECT_EQ(std::vector<float>(r.gradient(0), r.gradient(0) + 3), (std::vector<float>{111, 222, 333}));
  r.scale(0.5f);
  EXPECT_EQ(std::vector<float>(r.gradient(0), r.gradient(0) + 3), (std::vector<float>{55.5f, 111, 166.5f}));
  r.beginStep(); // the next step's first gradient replaces the sum
  r.add(0, f32(g1), true);
  EXPECT_EQ(std::vector<float>(r.gradient(0), r.gradient(0) + 3), g1);
  float loss = 2.5f;
  ASSERT_FALSE(llvm::errorToBool(r.averageLoss(loss)));
  EXPECT_EQ(loss, 2.5f);
}

TEST(GradientReducer, AGradientWrittenInPlaceIsKept) {
  // A backward bound to write straight into the bucket hands it back as is.
  std::vector<float> p(2);
  TensorView vp = f32(p);
  GradientReducer r({&vp}, nullptr, 25, true);
  r.gradient(0)[0] = 4;
  r.gradient(0)[1] = 5;
  r.add(0, TensorView{DType::F32, {2}, r.gradient(0)}, true);
  EXPECT_EQ(r.gradient(0)[0], 4);
  EXPECT_EQ(r.gradient(0)[1], 5);
}
