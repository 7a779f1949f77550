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
//
// On a pipeline stage (a plan with a pp axis) the schedule is GPipe's or
// 1F1B's (PipelineSchedule.h): a forward receives the activations of the
// stage before and sends its own on (StageLinks.h), a backward the
// gradients the other way; each micro-batch in flight keeps its own inputs
// and saved activations until its backward. Only the last stage has the
// loss (broadcast over pp for rank 0's log); each stage updates its own
// parameters, clipped by the norm over all stages.
//===----------------------------------------------------------------------===//
#include "runtime/train/Trainer.h"
#include "runtime/pipeline/StageLinks.h"
#include "runtime/schedule/AccumulationSchedule.h"
#include "runtime/schedule/PipelineSchedule.h"
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
#include "runtime/train/TraceLog.h"
#include "runtime/train/TrafficReport.h"
#include "llvm/Support/raw_ostream.h"
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
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

/// `specs`: the forward program's inputs, or under a pipeline the model's
/// (each stage reads some of them).
llvm::Expected<ForwardFeeds> forwardFeeds(const std::vector<TensorSpec> &specs, const TrainOptions &o) {
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
        gradNorm_(gradNorm), tokens_(std::move(tokens)), microBatches_(std::max(1, o.microBatches)),
        profile_(o.profile), trace_(!o.trace.empty()), dpSize_(session.axisSize("dp")), stages_(session.axisSize("pp")),
        stage_(session.coordinate("pp")) {
    PipelineKind kind = PipelineKind::OneFOneB;
    parsePipelineKind(o.schedule, kind); // checked by launch
    if (stages_ > 1)
      schedule_ = std::make_unique<PipelineSchedule>(kind, stages_, stage_, microBatches_);
    else
      schedule_ = std::make_unique<AccumulationSchedule>(microBatches_);
  }
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
  int64_t microBatches_;
  std::unique_ptr<Schedule> schedule_;
  StepProfile profile_;
  TraceLog trace_;
  using Clock = TraceLog::Clock;
  int64_t dpSize_, stages_, stage_;
  bool lastStage() const { return stage_ + 1 == stages_; }
  /// The parameters this rank updates (its stage's), and their shard types.
  std::vector<std::string> paramNames_;
  std::vector<TensorType> paramTypes_;
  std::vector<bool> paramPartitioned_;
  std::optional<StageLinks> links_; // under a pipeline
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
  /// A micro-batch whose forward ran and whose backward has not: its feeds
  /// (what it received too) and the forward's outputs, which its backward
  /// reads. Alone in flight (no pipeline), the outputs are the forward
  /// program's buffers; under a pipeline, copies.
  /// Under a pipeline each micro-batch in flight has buffers of its own for
  /// the forward's outputs (bound before its forward runs, so nothing is
  /// copied), taken from a pool as 1F1B or GPipe needs them.
  struct OutputSet {
    std::vector<std::unique_ptr<uint8_t, void (*)(void *)>> buffers;
  };
  std::vector<std::unique_ptr<OutputSet>> freeSets_;
  struct BoundOutput {
    size_t index;
    size_t bytes;
  };
  std::vector<BoundOutput> bound_; // the forward's outputs written into a set
  MemoryCharge setsCharge_{MemoryCategory::Activations, 0};
  size_t setsMade_ = 0;
  std::unique_ptr<OutputSet> takeSet();
  struct InFlight {
    Tensor ids, labels;
    llvm::StringMap<Tensor> received;
    llvm::StringMap<TensorView> feeds;
    std::unique_ptr<OutputSet> set;
    std::vector<Tensor> copies; // outputs the program cannot write into a set (none usually)
    std::vector<TensorView> outputs;
  };
  std::map<int64_t, InFlight> inFlight_;
  // The step being run (1-based).
  int step_ = 0;
  int64_t microBatchesRun_ = 0; // this step's
  float loss_ = 0;
  bool skipped_ = false;
};

llvm::Error TrainingRun::prepare(llvm::StringRef outDir) {
  std::vector<TensorSpec> specs;
  if (stages_ > 1)
    specs = plan_.inputs;
  else
    for (const auto &in : fwd_.inputs())
      specs.push_back({in.name, in.type});
  auto feeds = forwardFeeds(specs, o_);
  if (!feeds)
    return feeds.takeError();
  feeds_ = std::move(*feeds);
  if (stages_ > 1) {
    auto links = StageLinks::create(plan_, stage_, session_.group("pp"), fwd_, &bwd_);
    if (!links)
      return links.takeError();
    links_.emplace(std::move(*links));
    // The outputs each micro-batch keeps in its own buffers (not the loss).
    auto io = plan_.programIO.find(session_.rankPlan().program("forward"));
    if (io == plan_.programIO.end() || io->second.outputs.size() != fwd_.outputNames().size())
      return fail("plan.json has no outputs for this rank's forward program");
    for (size_t i = lastStage() ? 1 : 0; i < io->second.outputs.size(); ++i) {
      const TensorType &t = io->second.outputs[i].type;
      bound_.push_back({i, static_cast<size_t>(t.numel()) * dtypeSize(t.dtype)});
    }
    std::unique_ptr<OutputSet> first = takeSet();
    for (size_t k = bound_.size(); k-- > 0;) // those the program cannot write elsewhere are copied
      if (llvm::Error err = fwd_.bindOutput(fwd_.outputNames()[bound_[k].index], first->buffers[k].get())) {
        llvm::consumeError(std::move(err));
        bound_.erase(bound_.begin() + static_cast<long>(k));
        first->buffers.erase(first->buffers.begin() + static_cast<long>(k));
      }
    freeSets_.push_back(std::move(first));
  }
  for (size_t i = 0; i < plan_.params.size(); ++i) {
    if (!plan_.paramStages.empty() && plan_.paramStages[i] != stage_)
      continue;
    paramNames_.push_back(plan_.params[i]);
    if (i < plan_.paramTypes.size())
      paramTypes_.push_back(plan_.paramTypes[i]);
    if (i < plan_.paramPartitioned.size())
      paramPartitioned_.push_back(plan_.paramPartitioned[i]);
  }
  BatchLayout layout{o_.batch, o_.seq, microBatches_, dpSize_, session_.coordinate("dp")};
  auto sampler = BatchSampler::create(tokens_, layout, o_.seed);
  if (!sampler)
    return sampler.takeError();
  sampler_.emplace(*sampler);
  for (const std::string &name : paramNames_) {
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
    gradOutputs.push_back("grad." + paramNames_[i]);
    if (std::find(outs.begin(), outs.end(), gradOutputs.back()) == outs.end())
      return fail("the backward program has no gradient output for '" + paramNames_[i] + "'");
    // Shaped as the step reads it (ZeRO-2: the rank's part of the flat gradient).
    const TensorType *t = stepProgram_.inputType(optimizer_io::gradient(paramNames_[i]));
    if (!t)
      return fail("the step program has no gradient input for '" + paramNames_[i] + "'");
    numel.push_back(t->numel());
  }
  auto adam = AdamWState::create(stepProgram_, paramNames_, params_, plan_.optimizer);
  if (!adam)
    return adam.takeError();
  adam_.emplace(std::move(*adam));
  auto grads = GradientAccumulator::create(lastStage() ? &fwd_ : nullptr, bwd_, std::move(gradOutputs),
                                          std::move(numel), microBatches_);
  if (!grads)
    return grads.takeError();
  grads_ = std::move(*grads);
  // The step's programs run one after another: one arena serves them all.
  if (auto err = fwd_.shareArena({&bwd_, &stepProgram_, &gradNorm_}))
    return err;
  if (links_) { // MPI moves a large message only inside MPI calls: the sends progress between kernels
    Communicator *pp = session_.group("pp");
    fwd_.setAfterEachKernel([pp] { pp->progress(); });
    bwd_.setAfterEachKernel([pp] { pp->progress(); });
  }
  fwd_.setOverlapCollectives(!o_.noOverlap);
  bwd_.setOverlapCollectives(!o_.noOverlap);
  fwd_.setProfiling(o_.profile, o_.profileByNode);
  bwd_.setProfiling(o_.profile, o_.profileByNode);
  stepProgram_.setProfiling(o_.profile, o_.profileByNode);
  gradNorm_.setProfiling(o_.profile, o_.profileByNode);
  return llvm::Error::success();
}

std::unique_ptr<TrainingRun::OutputSet> TrainingRun::takeSet() {
  if (!freeSets_.empty()) {
    std::unique_ptr<OutputSet> set = std::move(freeSets_.back());
    freeSets_.pop_back();
    return set;
  }
  auto set = std::make_unique<OutputSet>();
  size_t total = 0;
  for (const BoundOutput &b : bound_) {
    size_t rounded = (std::max<size_t>(b.bytes, 1) + 63) / 64 * 64;
    set->buffers.emplace_back(static_cast<uint8_t *>(std::aligned_alloc(64, rounded)), std::free);
    total += rounded;
  }
  setsCharge_.resize(setsCharge_.bytes() + total);
  ++setsMade_;
  return set;
}

llvm::Error TrainingRun::run(const Action &action) {
  Clock::time_point start = Clock::now();
  switch (action.kind) {
  case Action::Kind::Forward:
    return forward(action);
  case Action::Kind::Backward:
    return backward(action);
  case Action::Kind::ReduceGradients: {
    llvm::Error err = reduceGradients();
    trace_.slice("reduce gradients", -1, "communication", start, Clock::now());
    return err;
  }
  case Action::Kind::OptimizerStep: {
    if (auto err = skipped_ ? llvm::Error::success() : optimizerStep())
      return err;
    if (links_) { // the copies of a weight two stages read (a tied embedding) stay one
      auto changed = links_->exchangeWeights(fwd_);
      if (!changed)
        return changed.takeError();
      if (*changed)
        fwd_.weightsChanged();
    }
    trace_.slice("optimizer step", -1, "compute", start, Clock::now());
    return llvm::Error::success();
  }
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
             !feeds_.constants.count(in.name) && !fwd_.inputType(in.name) && !(links_ && links_->receives(in.name)))
      return fail("the backward program's input '" + in.name +
                  "' is no forward output, forward weight, input of the micro-batch or value another stage sends");
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
  if (stages_ == 1)
    inFlight_.clear(); // one micro-batch at a time: its outputs are the program's buffers
  InFlight &m = inFlight_[action.microBatch];
  m.ids = Tensor::fromInts(DType::I64, {o_.batch, o_.seq}, ids);
  m.labels = Tensor::fromInts(DType::I64, {o_.batch, o_.seq}, labels);
  llvm::StringMap<TensorView> &feeds = m.feeds;
  feeds[feeds_.idsName] = viewOf(m.ids);
  feeds[feeds_.labelsName] = viewOf(m.labels);
  for (const auto &c : feeds_.constants)
    feeds[c.getKey()] = viewOf(c.getValue());
  Clock::time_point t0 = Clock::now();
  if (links_) {
    if (auto err = links_->receive(StageLinks::Phase::Forward, m.received))
      return err;
    for (const auto &r : m.received)
      feeds[r.getKey()] = viewOf(r.getValue());
    profile_.phase("receive");
    if (links_->receivesIn(StageLinks::Phase::Forward))
      trace_.slice("receive", action.microBatch, "pipeline", t0, Clock::now());
  }
  Clock::time_point t1 = Clock::now();
  if (links_) { // this micro-batch's own output buffers
    m.set = takeSet();
    for (size_t k = 0; k < bound_.size(); ++k)
      if (auto err = fwd_.bindOutput(fwd_.outputNames()[bound_[k].index], m.set->buffers[k].get()))
        return err;
  }
  grads_->beforeForward(action.microBatch);
  llvm::StringMap<TensorView> reads; // a stage reads some of the model's inputs
  for (const auto &in : fwd_.inputs())
    reads[in.name] = feeds.lookup(in.name);
  auto outs = fwd_.run(reads);
  if (!outs)
    return outs.takeError();
  if (lastStage())
    grads_->afterLoss(action.microBatch, *outs);
  profile_.phase("forward");
  Clock::time_point t2 = Clock::now();
  trace_.slice("forward", action.microBatch, "compute", t1, t2);
  if (links_) {
    if (auto err = links_->send(StageLinks::Phase::Forward, *outs))
      return err;
    m.outputs = *outs;
    m.copies.reserve(outs->size());
    for (size_t i = 0, k = 0; i < outs->size(); ++i) { // the rest the next forward overwrites
      if (k < bound_.size() && bound_[k].index == i) {
        ++k;
        continue;
      }
      m.copies.push_back(hostCopy((*outs)[i]));
      m.outputs[i] = viewOf(m.copies.back());
    }
    profile_.phase("send");
    if (links_->sendsIn(StageLinks::Phase::Forward))
      trace_.slice("send", action.microBatch, "pipeline", t2, Clock::now());
  } else {
    m.outputs = std::move(*outs);
  }
  return llvm::Error::success();
}

llvm::Error TrainingRun::backward(const Action &action) {
  auto it = inFlight_.find(action.microBatch);
  if (it == inFlight_.end())
    return fail("backward of micro-batch " + llvm::Twine(action.microBatch) + " before its forward");
  InFlight &m = it->second;
  Clock::time_point t0 = Clock::now();
  if (links_) {
    llvm::StringMap<Tensor> &received = m.received;
    if (auto err = links_->receive(StageLinks::Phase::Backward, received))
      return err;
    for (const auto &r : received)
      m.feeds[r.getKey()] = viewOf(r.getValue());
    profile_.phase("receive");
    if (links_->receivesIn(StageLinks::Phase::Backward))
      trace_.slice("receive", action.microBatch, "pipeline", t0, Clock::now());
  }
  Clock::time_point t1 = Clock::now();
  llvm::StringMap<TensorView> feeds;
  for (const BackwardInput &b : bwdInputs_)
    feeds[b.name] = b.savedIndex >= 0 ? m.outputs[b.savedIndex] : b.weight ? *b.weight : m.feeds.lookup(b.name);
  grads_->beforeBackward(action.microBatch);
  auto outs = bwd_.run(feeds);
  if (!outs)
    return outs.takeError();
  if (step_ == 1 && action.microBatch == 0)
    if (auto err = grads_->checkSizes(*outs))
      return err;
  grads_->afterGradients(action.microBatch, *outs);
  ++microBatchesRun_;
  profile_.phase("backward");
  Clock::time_point t2 = Clock::now();
  trace_.slice("backward", action.microBatch, "compute", t1, t2);
  if (links_) {
    if (auto err = links_->send(StageLinks::Phase::Backward, *outs))
      return err;
    profile_.phase("send");
    if (links_->sendsIn(StageLinks::Phase::Backward))
      trace_.slice("send", action.microBatch, "pipeline", t2, Clock::now());
  }
  if (stages_ > 1) {
    freeSets_.push_back(std::move(m.set));
    inFlight_.erase(it);
  }
  return llvm::Error::success();
}

llvm::Error TrainingRun::reduceGradients() {
  // The program reduced them (and the loss: the global batch's) in its last
  // micro-batch; what is left is the mean over the micro-batches.
  loss_ = static_cast<float>(grads_->lossSum() / microBatchesRun_);
  if (links_) { // the sends of this step are done; the last stage's loss for every rank's log
    if (auto err = links_->drain())
      return err;
    if (auto err = session_.group("pp")->broadcast(&loss_, 1, DType::F32, static_cast<int>(stages_ - 1)))
      return err;
    profile_.phase("pipeline flush");
  }
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
    auto norm = globalGradientNorm(gradNorm_, paramNames_, params_, grads);
    if (!norm)
      return norm.takeError();
    if (stages_ > 1) { // each stage's norm is of its own gradients
      float squares = static_cast<float>(*norm * *norm);
      if (auto err = session_.group("pp")->allReduce(&squares, 1, DType::F32))
        return err;
      *norm = std::sqrt(static_cast<double>(squares));
    }
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
    if (auto err = runStep(*schedule_, *this))
      return err;
    trace_.slice("step", step_, "step", stepStart, Clock::now());
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
    for (const TensorType &t : paramTypes_)
      paramBytes += static_cast<double>(t.numel()) * static_cast<double>(dtypeSize(t.dtype));
    printTraffic(llvm::outs(), session_, o_.steps, paramBytes);
  }
  if (links_)
    if (auto err = links_->drain())
      return err;
  if (trace_.on()) {
    std::string coords;
    for (const MeshAxis &a : plan_.mesh.axes)
      coords += (coords.empty() ? "" : ", ") + a.name + " " + std::to_string(session_.coordinate(a.name));
    std::string track = "rank " + std::to_string(session_.rank()) + (coords.empty() ? "" : " (" + coords + ")");
    if (auto err = trace_.writePart(o_.trace, session_.rank(), track))
      return err;
  }
  if (o_.memory) {
    const MemoryLedger &ledger = MemoryLedger::process();
    printMemoryLine(llvm::outs(), session_.rank(), "measured", ledger.atPeak(), ledger.peak());
  }
  return writeParameterShards(outDir, session_.rank(), paramNames_, params_, paramTypes_, paramPartitioned_,
                              dpSize_ > 1 ? session_.group("dp") : nullptr);
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
