#include "compiler/ir/Tensor.h"
#include "compiler/ops/Broadcast.h"
#include <cmath>
#include <gtest/gtest.h>

using namespace partita;

// IEEE 754 binary16 encodings, from the standard's examples.
TEST(Tensor, HalfKnownEncodings) {
  EXPECT_EQ(floatToHalf(1.0f), 0x3c00);
  EXPECT_EQ(floatToHalf(-2.0f), 0xc000);
  EXPECT_EQ(floatToHalf(65504.0f), 0x7bff);          // largest normal
  EXPECT_EQ(floatToHalf(1e6f), 0x7c00);              // overflows to +inf
  EXPECT_EQ(floatToHalf(5.9604645e-8f), 0x0001);     // smallest subnormal
  EXPECT_FLOAT_EQ(halfToFloat(0x3555), 0.333251953125f);
  EXPECT_TRUE(std::isnan(halfToFloat(0x7e00)));
}

TEST(Tensor, HalfRoundTripsEveryFiniteValue) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    if ((h & 0x7c00) == 0x7c00)
      continue; // inf/nan
    ASSERT_EQ(floatToHalf(halfToFloat(static_cast<uint16_t>(h))), h) << h;
  }
}

TEST(Tensor, Bf16RoundsToNearestEven) {
  EXPECT_EQ(floatToBf16(1.0f), 0x3f80);
  // 1 + 2^-8 is exactly halfway between two bf16 values: ties go to even (1.0).
  EXPECT_EQ(floatToBf16(1.00390625f), 0x3f80);
  EXPECT_EQ(floatToBf16(1.01171875f), 0x3f82);
}

TEST(Tensor, CastSemanticsTruncateTowardZero) {
  Tensor t = Tensor::fromDoubles(DType::I64, {3}, {2.7, -2.7, 0.0});
  EXPECT_EQ(t.toInts(), (std::vector<int64_t>{2, -2, 0}));
}

TEST(Broadcast, NumpyRules) {
  EXPECT_EQ(*broadcastShapes({{2, 1, 4}, {3, 1}}), (Shape{2, 3, 4}));
  EXPECT_EQ(*broadcastShapes({{}, {5}}), (Shape{5}));
  EXPECT_FALSE(broadcastShapes({{2, 3}, {4, 3}}).has_value());
  BroadcastIndexer idx({3, 1}, {2, 3, 4});
  // out index (1, 2, 3) -> in index (2, 0) = 2
  EXPECT_EQ(idx(1 * 12 + 2 * 4 + 3), 2);
}
