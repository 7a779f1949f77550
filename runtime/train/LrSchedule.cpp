//===- LrSchedule.cpp -----------------------------------------------------===//
#include "runtime/train/LrSchedule.h"
#include <cmath>

namespace partita::rt {

double lrFactor(const LrScheduleOptions &o, int64_t k, int64_t totalSteps) {
  int64_t warm = o.warmup, total = totalSteps;
  if (k < warm)
    return static_cast<double>(k + 1) / static_cast<double>(warm);
  if (o.shape == "constant")
    return 1.0;
  double p = total > warm ? static_cast<double>(k - warm) / static_cast<double>(total - warm) : 1.0;
  double lo = o.minLrRatio;
  if (o.shape == "linear")
    return 1.0 - p * (1.0 - lo);
  return lo + (1.0 - lo) * 0.5 * (1.0 + std::cos(M_PI * p));
}

} // namespace partita::rt
