// The learning-rate factors against their closed forms.
#include "runtime/train/LrSchedule.h"
#include <gtest/gtest.h>
#include <cmath>

using namespace partita::rt;

TEST(LrSchedule, ConstantIsOne) {
  LrScheduleOptions o;
  for (int64_t k : {0, 1, 9})
    EXPECT_EQ(lrFactor(o, k, 10), 1.0);
}

TEST(LrSchedule, WarmupRisesLinearlyToOne) {
  LrScheduleOptions o;
  o.warmup = 4;
  for (const char *shape : {"constant", "linear", "cosine"}) {
    o.shape = shape;
    EXPECT_DOUBLE_EQ(lrFactor(o, 0, 10), 0.25) << shape;
    EXPECT_DOUBLE_EQ(lrFactor(o, 1, 10), 0.5) << shape;
    EXPECT_DOUBLE_EQ(lrFactor(o, 3, 10), 1.0) << shape;
  }
}

TEST(LrSchedule, LinearDecaysToTheMinimumRatio) {
  // After 2 warmup steps of 12, p = (k - 2) / 10; factor = 1 - p (1 - 0.2).
  LrScheduleOptions o{"linear", 2, 0.2};
  EXPECT_DOUBLE_EQ(lrFactor(o, 2, 12), 1.0);
  EXPECT_NEAR(lrFactor(o, 7, 12), 0.6, 1e-15);
  EXPECT_NEAR(lrFactor(o, 11, 12), 0.28, 1e-15);
  EXPECT_NEAR(lrFactor(o, 12, 12), 0.2, 1e-15);
}

TEST(LrSchedule, CosineFollowsHalfACosine) {
  LrScheduleOptions o{"cosine", 0, 0};
  EXPECT_DOUBLE_EQ(lrFactor(o, 0, 8), 1.0);
  EXPECT_NEAR(lrFactor(o, 2, 8), 0.8535533905932737, 1e-15); // (1 + cos(pi/4)) / 2
  EXPECT_NEAR(lrFactor(o, 4, 8), 0.5, 1e-15);
  EXPECT_NEAR(lrFactor(o, 6, 8), 0.14644660940672624, 1e-15); // (1 - cos(pi/4)) / 2
  o.minLrRatio = 0.1; // 0.1 + 0.9 * the above
  EXPECT_NEAR(lrFactor(o, 4, 8), 0.55, 1e-15);
  EXPECT_NEAR(lrFactor(o, 8, 8), 0.1, 1e-15);
}

TEST(LrSchedule, AllWarmupEndsAtOne) {
  // warmup >= total: the decay's progress is taken as complete.
  LrScheduleOptions o{"linear", 5, 0.5};
  EXPECT_DOUBLE_EQ(lrFactor(o, 4, 5), 1.0);
  EXPECT_DOUBLE_EQ(lrFactor(o, 5, 5), 0.5);
}
