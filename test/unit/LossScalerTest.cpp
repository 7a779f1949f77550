// The dynamic loss scale against DeepSpeed's DynamicLossScaler.update_scale
// (deepspeed/runtime/fp16/loss_scaler.py), replayed by hand on one pattern of
// overflows: the expected scales below are that algorithm's, step by step.
#include "runtime/train/LossScaler.h"
#include <gtest/gtest.h>

using partita::rt::LossScaleOptions;
using partita::rt::LossScaler;

TEST(LossScaler, FollowsDeepSpeedsDynamicScaler) {
  LossScaleOptions o;
  o.initialScalePower = 4; // 16
  o.window = 3;
  o.hysteresis = 2;
  o.minScale = 2;
  LossScaler s(o);
  EXPECT_EQ(s.scale(), 16);
  // iteration: overflow? -> scale after it
  // 0: overflow, hysteresis 2 -> 1, scale kept
  EXPECT_EQ(s.update(true), 16);
  // 1: overflow, hysteresis 1: halved
  EXPECT_EQ(s.update(true), 8);
  // 2, 3: clean; (iteration - last overflow) = 1, 2: not a multiple of 3
  EXPECT_EQ(s.update(false), 8);
  EXPECT_EQ(s.update(false), 8);
  // 4: clean, 4 - 1 = 3: doubled, hysteresis back to 2
  EXPECT_EQ(s.update(false), 16);
  // 5: overflow with hysteresis 2: kept; 6: halved; 7: halved again (hysteresis stays 1)
  EXPECT_EQ(s.update(true), 16);
  EXPECT_EQ(s.update(true), 8);
  EXPECT_EQ(s.update(true), 4);
  // 8, 9: overflows down to the floor, and not below it
  EXPECT_EQ(s.update(true), 2);
  EXPECT_EQ(s.update(true), 2);
}

TEST(LossScaler, AStaticScaleNeverChanges) {
  LossScaleOptions o;
  o.staticScale = 128;
  LossScaler s(o);
  EXPECT_FALSE(s.dynamic());
  EXPECT_EQ(s.update(true), 128);
  EXPECT_EQ(s.update(false), 128);
}
