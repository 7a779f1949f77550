//===- TrainState.h - everything a training run must keep to go on --------===//
//
// The one place that knows what a rank's training state is: the run's
// progress (steps run, optimizer updates taken, steps skipped, sequences
// drawn, the sampler's seed), the fp16 loss scaler, and every tensor the
// next step reads that an earlier step wrote: per parameter of each model
// chunk its weight (the fp32 master copy under mixed precision), its two
// AdamW moments and, under mixed precision, its half copy (the master's
// rounding). It owns them: the moments are memory it allocates, the
// weights and master copies the programs' static buffers it takes over once
// they are loaded (the programs go on computing on them in place); under
// optimizer offload the step's host copies of fp32 weights stay
// OptimizerOffload's, registered here. Each tensor is registered with where it lies in its whole
// tensor (StatePlacement.h), so a checkpoint can write the state out and read
// it back whole, under this layout or any other (runtime/checkpoint/). The learning-rate schedule's
// position is the number of updates; the sampler's, the sequences drawn.
//===----------------------------------------------------------------------===//
#pragma once
#include "compiler/plan/Plan.h"
#include "runtime/checkpoint/StateBox.h"
#include "runtime/core/Device.h"
#include "runtime/core/DeviceTensor.h"
#include "runtime/core/TensorView.h"
#include "runtime/executor/Program.h"
#include "runtime/train/LossScaler.h"
#include <map>
#include <optional>

namespace partita::rt {

enum class StateKind {
  Weight,     // the parameter in float32: the master copy, or the parameter itself
  Moment1,    // AdamW's m
  Moment2,    // AdamW's v
  HalfWeight, // the parameter the forward reads when it is a copy of the Weight (read back, never
              // saved): mixed precision's rounding, or the device's copy under optimizer offload
};
/// "weight", "adam_m", "adam_v", "half_weight": the names checkpoints use.
const char *stateKindName(StateKind kind);

struct StateTensor {
  std::string name; // the parameter (a stage's copy of a shared weight: the weight it copies)
  StateKind kind;
  TensorView view;  // this rank's buffer
  Device *device;   // whose memory `view` is (the state's device, or the host's under optimizer offload)
  Shape whole;      // the whole tensor's shape
  StateBox box;     // what `view` holds of it
  bool writer;      // this rank saves it: one of the ranks holding the same piece (StatePlacement.h)
};

struct TrainProgress {
  int64_t step = 0;    // steps run, skipped ones included (the next is step + 1)
  int64_t updates = 0; // optimizer updates taken: AdamW's t and the lr schedule's position
  int64_t skipped = 0; // steps that skipped their update
  int64_t samples = 0; // sequences drawn over all replicas: the sampler's position
  int64_t seed = 0;    // the sampler's seed
};

class TrainState {
public:
  /// The state's tensors are memory of `device`.
  TrainState(const Plan &plan, std::map<std::string, int64_t> coords, Device &device)
      : plan_(&plan), coords_(std::move(coords)), device_(&device) {}

  TrainProgress progress;
  std::optional<LossScaler> scaler; // fp16 plans

  /// Registers this rank's `kind` of parameter plan.params[param], held in
  /// `view` (its shard, or its ZeRO part), memory of `on` (null: device()).
  llvm::Error add(size_t param, StateKind kind, const TensorView &view, Device *on = nullptr);
  /// Allocates this rank's `kind` of parameter plan.params[param] as zeros
  /// of `type` in memory of `on` (null: device()) that it owns (charged as
  /// optimizer states), registers it, and returns its view.
  llvm::Expected<TensorView> allocate(size_t param, StateKind kind, const TensorType &type, Device *on = nullptr);
  /// Takes over `program`'s weight `weight` (Program::releaseWeight: the
  /// program goes on computing on it in place), charged to `category`, and
  /// registers it as this rank's `kind` of parameter plan.params[param].
  llvm::Expected<TensorView> adopt(size_t param, StateKind kind, Program &program, llvm::StringRef weight,
                                   MemoryCategory category);
  const std::vector<StateTensor> &tensors() const { return tensors_; }
  const Plan &plan() const { return *plan_; }
  Device &device() const { return *device_; }

private:
  const Plan *plan_;
  std::map<std::string, int64_t> coords_;
  Device *device_;
  std::vector<StateTensor> tensors_;
  std::vector<DeviceTensor> owned_; // what allocate() made
};

} // namespace partita::rt
