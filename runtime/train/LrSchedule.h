//===- LrSchedule.h - the learning rate of each optimizer step ------------===//
//
// Linear warmup over `warmup` steps, then constant, linear or cosine decay to
// `minLrRatio` of the base rate (DeepSpeed's WarmupDecayLR / WarmupCosineLR
// shapes).
//===----------------------------------------------------------------------===//
#pragma once
#include <cstdint>
#include <string>

namespace partita::rt {

struct LrScheduleOptions {
  std::string shape = "constant"; // --lr-schedule: constant, linear or cosine (after warmup)
  int warmup = 0;                 // --warmup-steps
  double minLrRatio = 0;          // --min-lr-ratio: the decay's end, as a fraction of --lr
};

/// The factor on the base learning rate of optimizer step `k` (0-based) of
/// `totalSteps`.
double lrFactor(const LrScheduleOptions &o, int64_t k, int64_t totalSteps);

} // namespace partita::rt
