//===- LossScaler.h - fp16 loss scaling, as DeepSpeed's -------------------===//
//
// fp16 training multiplies the loss (the backward's seed) by a scale S so that
// small gradients do not flush to zero, and divides the gradients by S before
// the step. A static scale (DeepSpeed's fp16.loss_scale > 0) stays; a dynamic
// one (loss_scale 0) starts at 2^initial_scale_power and follows
// deepspeed/runtime/fp16/loss_scaler.py's DynamicLossScaler:
//
//  * a step whose gradients overflowed (their norm is not finite) is skipped
//    on every rank; the scale is halved (not below min_loss_scale) once
//    `hysteresis` overflows have been seen since the last halving;
//  * after loss_scale_window steps in a row without an overflow the scale is
//    doubled and the hysteresis counter restored.
//===----------------------------------------------------------------------===//
#pragma once
#include <algorithm>
#include <cstdint>

namespace partita::rt {

struct LossScaleOptions {
  double staticScale = 0; // > 0: this scale, never changed
  int initialScalePower = 16;
  int64_t window = 1000;
  int hysteresis = 2;
  double minScale = 1;
};

/// What a dynamic scaler has counted: a checkpoint saves it, a resume
/// restores it (the options come from the resumed run's flags).
struct LossScalerState {
  double scale = 0;
  int hysteresisLeft = 0;
  int64_t iteration = 0, lastOverflow = -1;
};

class LossScaler {
public:
  explicit LossScaler(const LossScaleOptions &o);
  double scale() const { return scale_; }
  bool dynamic() const { return o_.staticScale <= 0; }
  /// Whether an overflow now can be met by skipping the step and lowering
  /// the scale: not for a static scale, nor for a dynamic one at its floor
  /// that would halve now (DeepSpeed raises there: "Current loss scale
  /// already at minimum - cannot decrease scale anymore").
  bool canBackOff() const {
    return dynamic() && !(scale_ <= o_.minScale && (o_.hysteresis == 1 || hysteresisLeft_ == 1));
  }
  /// After a step: `overflow` when its gradients were not finite (the step
  /// was skipped). Returns the scale the next step uses.
  double update(bool overflow);
  LossScalerState state() const { return {scale_, hysteresisLeft_, iteration_, lastOverflow_}; }
  /// Goes on from `s`; a static scale stays the flag's.
  void restore(const LossScalerState &s) {
    if (dynamic())
      scale_ = s.scale;
    hysteresisLeft_ = std::max(1, std::min(s.hysteresisLeft, o_.hysteresis)); // a run's --hysteresis may be lower
    iteration_ = s.iteration;
    lastOverflow_ = s.lastOverflow;
  }

private:
  LossScaleOptions o_;
  double scale_;
  int hysteresisLeft_;
  int64_t iteration_ = 0, lastOverflow_ = -1;
};

} // namespace partita::rt
