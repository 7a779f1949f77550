//===- StageRun.h - one model chunk's programs in a training step ---------===//
//
// What a rank runs of one pipeline stage (without a pipeline: the whole
// model; with interleaving, one of its model chunks): the stage's forward,
// backward, grad_norm and step programs, the values it receives from and
// sends to other stages (partita.Recv and partita.Send in its programs; a
// shared weight's gradient: StageLinks.h), its parameters, their summed
// gradients (GradientAccumulator.h) and AdamW moments, and the micro-batches
// in flight. Under a pipeline each micro-batch in flight keeps its inputs,
// its saved activations (what it received among them) until its backward,
// in output buffers of its own (bound before its forward, taken from a pool),
// so they are not copied (what is sent is: PendingSends.h). The training loop
// (Trainer.cpp) runs the schedule's actions on the rank's StageRuns.
//===----------------------------------------------------------------------===//
#pragma once
#include "compiler/plan/Plan.h"
#include "runtime/executor/Program.h"
#include "runtime/pipeline/StageLinks.h"
#include "runtime/session/Session.h"
#include "runtime/train/AdamWState.h"
#include "runtime/train/BatchSampler.h"
#include "runtime/train/GradientAccumulator.h"
#include "runtime/train/StepProfile.h"
#include "runtime/train/TraceLog.h"
#include "runtime/train/TrainOptions.h"
#include "runtime/train/OptimizerOffload.h"
#include "runtime/train/TrainState.h"
#include "llvm/ADT/StringMap.h"
#include <map>
#include <optional>

namespace partita::rt {

/// The forward's inputs every step feeds: the token ids and labels of each
/// micro-batch, and the inputs that are the same every step (attention
/// mask, position ids), by role (InputRoles.h).
struct ForwardFeeds {
  std::string idsName, labelsName = "labels";
  llvm::StringMap<Tensor> constants;
};

/// The programs of one stage of this rank (names in the plan: "forward",
/// "backward", "grad_norm", "step", with the chunk's suffix, Plan.h).
struct StagePrograms {
  Program *forward, *backward, *step, *gradNorm;
};

class StageRun {
public:
  /// `stage`: the global stage (chunk) index; `hasLoss`: the last stage.
  StageRun(Session &session, const TrainOptions &o, StagePrograms programs, int64_t stage, bool hasLoss,
           StepProfile &profile, TraceLog &trace)
      : session_(session), plan_(session.plan()), o_(o), p_(programs), stage_(stage), hasLoss_(hasLoss),
        microBatches_(std::max(1, o.microBatches)), profile_(profile), trace_(trace) {}
  StageRun(StageRun &&) = default;

  /// Also registers the stage's parameters, masters and moments in `state`.
  llvm::Error prepare(const ForwardFeeds &feeds, TrainState &state);
  /// The fp16 loss scale the next micro-batches' backwards read (input
  /// loss_scale; prepare() takes the first from the feeds' constants).
  void setLossScale(float scale);
  /// After a checkpoint restored the state in place: kernels drop what they
  /// derived from the old weights.
  void stateRestored();
  /// Micro-batch `micro` of step `step` (1-based); `sampler` draws its batch.
  llvm::Error forward(int step, int64_t micro, BatchSampler &sampler);
  llvm::Error backward(int step, int64_t micro);
  /// The loss summed over the step's micro-batches (the last stage's; 0 elsewhere).
  double lossSum() const { return grads_->lossSum(); }
  /// The squared norm of this stage's summed gradients (its grad_norm program's, squared).
  llvm::Expected<double> squaredGradientNorm();
  /// After the step's last backward, the gradients of the weights this
  /// stage and another both hold (a tied embedding's table and its copy):
  /// sent to the other stage, then the other's added (StageLinks). Every
  /// chunk of the rank sends before any adds.
  llvm::Error sendSharedGradients();
  llvm::Error addSharedGradients();
  /// AdamW on this stage's parameters.
  llvm::Error step(int step, float lr, float gradScale, bool skip);
  /// Parameter shards into outDir/rank<k>/ (ZeRO-3's parts gathered over dp).
  llvm::Error writeParameters(llvm::StringRef outDir) const;

  int64_t stage() const { return stage_; }
  const std::vector<TensorType> &paramTypes() const { return paramTypes_; }
  std::vector<std::pair<std::string, Program *>> programs() const;

private:
  struct OutputSet {
    std::vector<DeviceTensor> buffers;
  };
  llvm::Expected<std::unique_ptr<OutputSet>> takeSet();
  llvm::Error bindBackwardInputs(const ForwardFeeds &feeds);
  /// " (chunk c)" when the rank holds several stages.
  std::string chunkSuffix() const;

  Session &session_;
  const Plan &plan_;
  const TrainOptions &o_;
  StagePrograms p_;
  int64_t stage_;
  bool hasLoss_;
  int64_t microBatches_;
  StepProfile &profile_;
  TraceLog &trace_;
  const ForwardFeeds *feeds_ = nullptr;
  std::optional<StageLinks> links_; // under a pipeline
  /// The parameters this stage updates, their shard types.
  std::vector<std::string> paramNames_;
  std::vector<size_t> paramIndex_; // in plan.params
  std::vector<TensorType> paramTypes_;
  std::vector<bool> paramPartitioned_;
  std::vector<const TensorView *> params_;
  std::vector<const TensorView *> written_; // what writeParameters writes: params_, their master or host copies
  std::vector<int64_t> gradNumel_; // as the step reads each gradient
  /// The summed gradient of parameter i, as the step reads it.
  TensorView gradient(size_t i) const { return grads_->gradient(i); }
  std::vector<size_t> shared_; // the parameters whose gradients another stage's are added to
  std::unique_ptr<GradientAccumulator> grads_;
  std::optional<AdamWState> adam_;
  std::optional<OptimizerOffload> offload_; // under --offload-optimizer
  /// Where each backward input comes from: a forward output (a saved
  /// activation, by index), a forward weight, or a feed of the micro-batch.
  struct BackwardInput {
    std::string name;
    int savedIndex = -1;
    const TensorView *weight = nullptr;
  };
  std::vector<BackwardInput> bwdInputs_;
  struct BoundOutput {
    size_t index;
    size_t bytes;
  };
  std::vector<BoundOutput> bound_; // the forward's outputs a micro-batch keeps in its own set
  std::vector<std::unique_ptr<OutputSet>> freeSets_;
  llvm::StringMap<DeviceTensor> constantFeeds_; // ForwardFeeds::constants on the device
  /// A micro-batch whose forward ran and whose backward has not. Alone in
  /// flight (no pipeline), its outputs are the forward program's buffers.
  struct InFlight {
    Tensor ids, labels;
    DeviceTensor deviceIds, deviceLabels;
    llvm::StringMap<TensorView> feeds;
    std::unique_ptr<OutputSet> set;
    std::vector<DeviceTensor> copies; // outputs the program cannot write into a set (the loss)
    std::vector<TensorView> outputs;
  };
  std::map<int64_t, InFlight> inFlight_;
  bool sizesChecked_ = false; // the gradients' sizes, checked once
};

} // namespace partita::rt
