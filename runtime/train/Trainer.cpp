//===- Trainer.cpp - the training loop of one rank ------------------------===//
//
// Per step, the accumulation schedule's actions: forward, then backward, per
// micro-batch (the backward reads the activations the forward saved, its
// weights and the micro-batch's inputs; gradients summed in the
// GradientAccumulator; under data
// parallelism the program all-reduces them over dp itself, in buckets that
// overlap its backward, once per step), then the grad_norm program for
// clipping and the step program, which scales the sums to the clipped mean
// and updates the forward program's weights in place.
//===----------------------------------------------------------------------===//
#include "runtime/train/Trainer.h"
#include "runtime/schedule/AccumulationSchedule.h"
#include "runtime/session/InputRoles.h"
#include "runtime/train/AdamWState.h"
#include "runtime/train/BatchSampler.h"
#include "runtime/train/GradientClipping.h"
#include "runtime/train/GradientAccumulator.h"
#include "runtime/train/HostTensor.h"
#include "runtime/train/LossLog.h"
#include "runtime/train/MemoryReport.h"
#include "runtime/train/ParameterOutput.h"
#include "runtime/train/StepProfile.h"
#include "runtime/train/TrafficReport.h"
#include "llvm/Support/raw_ostream.h"
#include <algorithm>
#include <cmath>
#include <optional>

namespace partita::rt {

static llvm::Error fail(const llvm::Twine &msg) { return llvm::createStringError(llvm::inconvertibleErrorCode(), msg); }

namespace {

/// The forward program's inputs: the token ids and labels of each
/// micro-batch, and the inputs that are the same every step (attention
/// mask, position ids), by role (InputRoles.h).
struct ForwardFeeds {
  std::string idsName, labelsName = "labels";
  llvm::StringMap<Tensor> constants;
};

llvm::Expected<ForwardFeeds> forwardFeeds(const Program &fwd, const TrainOptions &o) {
  std::vector<TensorSpec> specs;
  for (const auto &in : fwd.inputs())
    specs.push_back({in.name, in.type});
  auto roles = trainingInputRoles(specs, o.idsInput, o.batch, o.seq);
  if (!roles)
    return roles.takeError();
  ForwardFeeds f;
  for (const TensorSpec &in : specs) {
    InputRole role = roles->at(in.name);
    if (role == InputRole::Ids)
      f.idsName = in.name;
    else if (role == InputRole::Labels)
      f.labelsName = in.name;
    else
      f.constants[in.name] = constantFeed(role, in.type);
  }
  return f;
}

class TrainingRun final : public ActionRunner {
public:
  TrainingRun(Session &session, const TrainOptions &o, Program &fwd, Program &bwd, Program &stepProgram,
              Program &gradNorm, TokenFile tokens)
      : session_(session), plan_(session.plan()), o_(o), fwd_(fwd), bwd_(bwd), stepProgram_(stepProgram),
        gradNorm_(gradNorm), tokens_(std::move(tokens)),
        schedule_(o.microBatches), profile_(o.profile), dpSize_(session.axisSize("dp")) {}
  llvm::Error prepare(llvm::StringRef outDir);
  llvm::Error trainAll(llvm::StringRef outDir);
  llvm::Error run(const Action &action) override;

private:
  llvm::Error forward(const Action &action);
  llvm::Error backward(const Action &action);
  llvm::Error bindBackwardInputs();
  llvm::Error reduceGradients();
  llvm::Error optimizerStep();

  Session &session_;
  const Plan &plan_;
  const TrainOptions &o_;
  Program &fwd_, &bwd_, &stepProgram_, &gradNorm_;
  TokenFile tokens_;
  AccumulationSchedule schedule_;
  StepProfile profile_;
  int64_t dpSize_;
  std::optional<BatchSampler> sampler_;
  ForwardFeeds feeds_;
  std::vector<const TensorView *> params_;
  std::unique_ptr<GradientAccumulator> grads_;
  std::optional<AdamWState> adam_;
  std::optional<LossLog> log_; // rank 0
  /// Where each backward input comes from: a forward output (a saved
  /// activation, by index), a forward weight, or a feed of the micro-batch.
  struct BackwardInput {
    std::string name;
    int savedIndex = -1;
    const TensorView *weight = nullptr;
  };
  std::vector<BackwardInput> bwdInputs_;
  /// The micro-batch whose forward ran last: its feeds and outputs (valid
  /// until the forward's next run), which its backward reads.
  int64_t forwardMicro_ = -1;
  Tensor ids_, labels_;
  llvm::StringMap<TensorView> forwardFeeds_;
  std::vector<TensorView> forwardOutputs_;
  // The step being run (1-based).
  int step_ = 0;
  int64_t microBatchesRun_ = 0; // this step's
  float loss_ = 0;
  bool skipped_ = false;
};

llvm::Error TrainingRun::prepare(llvm::StringRef outDir) {
  auto feeds = forwardFeeds(fwd_, o_);
  if (!feeds)
    return feeds.takeError();
  feeds_ = std::move(*feeds);
  BatchLayout layout{o_.batch, o_.seq, schedule_.microBatches(), dpSize_, session_.coordinate("dp")};
  auto sampler = BatchSampler::create(tokens_, layout, o_.seed);
  if (!sampler)
    return sampler.takeError();
  sampler_.emplace(*sampler);
  for (const std::string &name : plan_.params) {
    const TensorView *p = fwd_.staticTensor(name);
    if (!p)
      return fail("the forward program has no weight '" + name + "'");
    params_.push_back(p);
  }
  if (session_.rank() == 0) {
    auto log = LossLog::open(outDir, o_.steps, o_.progressBar);
    if (!log)
      return log.takeError();
    log_.emplace(std::move(*log));
  }
  std::vector<std::string> gradOutputs;
  std::vector<int64_t> numel;
  const auto &outs = bwd_.outputNames();
  if (auto err = bindBackwardInputs())
    return err;
  for (size_t i = 0; i < params_.size(); ++i) {
    gradOutputs.push_back("grad." + plan_.params[i]);
    if (std::find(outs.begin(), outs.end(), gradOutputs.back()) == outs.end())
      return fail("the backward program has no gradient output for '" + plan_.params[i] + "'");
    // Shaped as the step reads it (ZeRO-2: the rank's part of the flat gradient).
    const TensorType *t = stepProgram_.inputType(optimizer_io::gradient(plan_.params[i]));
    if (!t)
      return fail("the step program has no gradient input for '" + plan_.params[i] + "'");
    numel.push_back(t->numel());
  }
  auto adam = AdamWState::create(stepProgram_, plan_.params, params_, plan_.optimizer);
  if (!adam)
    return adam.takeError();
  adam_.emplace(std::move(*adam));
  auto grads =
      GradientAccumulator::create(fwd_, bwd_, std::move(gradOutputs), std::move(numel), schedule_.microBatches());
  if (!grads)
    return grads.takeError();
  grads_ = std::move(*grads);
  // The step's programs run one after another: one arena serves them all.
  if (auto err = fwd_.shareArena({&bwd_, &stepProgram_, &gradNorm_}))
    return err;
  fwd_.setOverlapCollectives(!o_.noOverlap);
  bwd_.setOverlapCollectives(!o_.noOverlap);
  fwd_.setProfiling(o_.profile, o_.profileByNode);
  bwd_.setProfiling(o_.profile, o_.profileByNode);
  stepProgram_.setProfiling(o_.profile, o_.profileByNode);
  gradNorm_.setProfiling(o_.profile, o_.profileByNode);
  return llvm::Error::success();
}

llvm::Error TrainingRun::run(const Action &action) {
  switch (action.kind) {
  case Action::Kind::Forward:
    return forward(action);
  case Action::Kind::Backward:
    return backward(action);
  case Action::Kind::ReduceGradients:
    return reduceGradients();
  case Action::Kind::OptimizerStep:
    return skipped_ ? llvm::Error::success() : optimizerStep();
  }
  return fail(llvm::Twine("the training loop cannot run ") + actionName(action.kind));
}

llvm::Error TrainingRun::bindBackwardInputs() {
  const auto &outs = fwd_.outputNames();
  for (const auto &in : bwd_.inputs()) {
    BackwardInput b{in.name};
    if (auto it = std::find(outs.begin(), outs.end(), in.name); it != outs.end())
      b.savedIndex = static_cast<int>(it - outs.begin());
    else if (!(b.weight = fwd_.staticTensor(in.name)) && in.name != feeds_.idsName && in.name != feeds_.labelsName &&
             !feeds_.constants.count(in.name))
      return fail("the backward program's input '" + in.name +
                  "' is no forward output, forward weight or input of the micro-batch");
    bwdInputs_.push_back(std::move(b));
  }
  return llvm::Error::success();
}

llvm::Error TrainingRun::forward(const Action &action) {
  // Global batch of a step: dp x micro-batches x B sequences; this replica
  // takes its dp block, micro-batch by micro-batch.
  std::vector<int64_t> ids, labels;
  if (auto err = sampler_->fill(step_, action.microBatch, plan_.vocab, ids, labels))
    return err;
  ids_ = Tensor::fromInts(DType::I64, {o_.batch, o_.seq}, ids);
  labels_ = Tensor::fromInts(DType::I64, {o_.batch, o_.seq}, labels);
  llvm::StringMap<TensorView> &feeds = forwardFeeds_;
  feeds.clear();
  feeds[feeds_.idsName] = viewOf(ids_);
  feeds[feeds_.labelsName] = viewOf(labels_);
  for (const auto &c : feeds_.constants)
    feeds[c.getKey()] = viewOf(c.getValue());
  grads_->beforeRun(action.microBatch);
  auto outs = fwd_.run(feeds);
  if (!outs)
    return outs.takeError();
  grads_->afterLoss(action.microBatch, *outs);
  forwardOutputs_ = std::move(*outs);
  forwardMicro_ = action.microBatch;
  profile_.phase("forward");
  return llvm::Error::success();
}

llvm::Error TrainingRun::backward(const Action &action) {
  if (action.microBatch != forwardMicro_)
    return fail("backward of micro-batch " + llvm::Twine(action.microBatch) + " after the forward of " +
                llvm::Twine(forwardMicro_) + ": this loop keeps one micro-batch's saved activations");
  llvm::StringMap<TensorView> feeds;
  for (const BackwardInput &b : bwdInputs_)
    feeds[b.name] = b.savedIndex >= 0 ? forwardOutputs_[b.savedIndex]
                    : b.weight        ? *b.weight
                                      : forwardFeeds_.lookup(b.name);
  auto outs = bwd_.run(feeds);
  if (!outs)
    return outs.takeError();
  if (step_ == 1 && action.microBatch == 0)
    if (auto err = grads_->checkSizes(*outs))
      return err;
  grads_->afterGradients(action.microBatch, *outs);
  ++microBatchesRun_;
  profile_.phase("backward");
  return llvm::Error::success();
}

llvm::Error TrainingRun::reduceGradients() {
  // The program reduced them (and the loss: the global batch's) in its last
  // micro-batch; what is left is the mean over the micro-batches.
  loss_ = static_cast<float>(grads_->lossSum() / microBatchesRun_);
  return llvm::Error::success();
}

llvm::Error TrainingRun::optimizerStep() {
  // Gradients are sums over M micro-batches (each the global batch's mean
  // gradient): the step program scales them by 1/M and the clipping
  // coefficient, the grad_norm program gives the sums' norm.
  double coef = 1.0 / static_cast<double>(microBatchesRun_);
  std::vector<float *> grads;
  for (size_t i = 0; i < params_.size(); ++i)
    grads.push_back(grads_->gradient(i));
  if (o_.clipNorm > 0) {
    auto norm = globalGradientNorm(gradNorm_, plan_.params, params_, grads);
    if (!norm)
      return norm.takeError();
    *norm *= coef;
    if (!std::isfinite(*norm)) {
      if (!o_.skipNonfinite)
        return fail("step " + llvm::Twine(step_) + ": the gradient norm is not finite; stopping");
      if (log_)
        log_->skipped(step_, ": gradient norm not finite, update skipped");
      skipped_ = true;
      return llvm::Error::success();
    }
    coef *= clipCoefficient(*norm, o_.clipNorm);
  }
  if (!std::isfinite(loss_)) {
    if (!o_.skipNonfinite)
      return fail("step " + llvm::Twine(step_) + ": the loss is not finite (" + std::to_string(loss_) +
                  "); stopping (--skip-nonfinite skips such steps)");
    if (log_)
      log_->skipped(step_, "  loss " + std::to_string(loss_) + ": not finite, update skipped");
    skipped_ = true;
    return llvm::Error::success();
  }
  profile_.phase("gradient norm");
  float lr = static_cast<float>(o_.lr * lrFactor(o_.lrSchedule, step_ - 1, o_.steps));
  if (auto err = adam_->apply(step_, lr, static_cast<float>(coef), grads))
    return err;
  fwd_.weightsChanged();
  profile_.phase("optimizer step");
  return llvm::Error::success();
}

llvm::Error TrainingRun::trainAll(llvm::StringRef outDir) {
  using Clock = std::chrono::steady_clock;
  auto start = Clock::now();
  for (step_ = 1; step_ <= o_.steps; ++step_) {
    auto stepStart = Clock::now();
    profile_.beginStep(step_);
    microBatchesRun_ = 0;
    skipped_ = false;
    if (auto err = runStep(schedule_, *this))
      return err;
    if (skipped_)
      continue;
    if (step_ == 1) { // the first step includes one-time set-up
      fwd_.clearProfile();
      bwd_.clearProfile();
      stepProgram_.clearProfile();
      gradNorm_.clearProfile();
    }
    if (log_) {
      double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
      double secs = std::chrono::duration<double>(Clock::now() - stepStart).count();
      int64_t tokens = int64_t{o_.batch} * o_.seq * microBatchesRun_ * dpSize_;
      double tps = static_cast<double>(tokens) / std::max(secs, 1e-9);
      log_->record(step_, loss_, tps, elapsed);
    }
  }
  if (o_.profile && session_.rank() == 0 && o_.steps > 1)
    profile_.print(llvm::outs(), o_.steps, {{"forward program", &fwd_}, {"backward program", &bwd_}, {"optimizer program", &stepProgram_},
                                               {"gradient norm program", &gradNorm_}},
                   o_.profileByNode);
  if (o_.profile && session_.rank() == 0) {
    double paramBytes = 0; // the rank's whole shards (a ZeRO-3 rank holds a part of each)
    for (const TensorType &t : plan_.paramTypes)
      paramBytes += static_cast<double>(t.numel()) * static_cast<double>(dtypeSize(t.dtype));
    printTraffic(llvm::outs(), session_, o_.steps, paramBytes);
  }
  if (o_.memory) {
    const MemoryLedger &ledger = MemoryLedger::process();
    printMemoryLine(llvm::outs(), session_.rank(), "measured", ledger.atPeak(), ledger.peak());
  }
  return writeParameterShards(outDir, session_.rank(), plan_.params, params_, plan_.paramTypes,
                              plan_.paramPartitioned, dpSize_ > 1 ? session_.group("dp") : nullptr);
}

} // namespace

llvm::Error train(Session &session, const TrainOptions &o, llvm::StringRef outDir) {
  Program *fwd = session.program("forward"), *bwd = session.program("backward"), *step = session.program("step"),
          *norm = session.program("grad_norm");
  if (!fwd || !bwd || !step || !norm)
    return fail("the plan gives rank " + llvm::Twine(session.rank()) +
                " no forward, backward, grad_norm and step programs: compile it with --train");
  auto tokens = TokenFile::open(o.data, o.dataDtype);
  if (!tokens)
    return tokens.takeError();
  TrainingRun run(session, o, *fwd, *bwd, *step, *norm, std::move(*tokens));
  if (auto err = run.prepare(outDir))
    return err;
  return run.trainAll(outDir);
}

} // namespace partita::rt
