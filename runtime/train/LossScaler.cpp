//===- LossScaler.cpp - fp16 loss scaling, as DeepSpeed's -----------------===//
#include "runtime/train/LossScaler.h"
#include <algorithm>
#include <cmath>

namespace partita::rt {

LossScaler::LossScaler(const LossScaleOptions &o)
    : o_(o), scale_(o.staticScale > 0 ? o.staticScale : std::ldexp(1.0, o.initialScalePower)),
      hysteresisLeft_(o.hysteresis) {}

double LossScaler::update(bool overflow) {
  if (!dynamic())
    return scale_;
  if (overflow) {
    if (o_.hysteresis == 1 || hysteresisLeft_ == 1)
      scale_ = std::max(scale_ / 2, o_.minScale);
    else
      --hysteresisLeft_;
    lastOverflow_ = iteration_;
  } else if ((iteration_ - lastOverflow_) % o_.window == 0) {
    hysteresisLeft_ = o_.hysteresis;
    scale_ *= 2;
  }
  ++iteration_;
  return scale_;
}

} // namespace partita::rt
