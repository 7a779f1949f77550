//===- Trainer.cpp - the training loop of one rank ------------------------===//
//
// Per step, the schedule's actions on the rank's stages (StageRun.h): the
// forward and backward of each micro-batch (gradients summed in the
// GradientAccumulator; under data parallelism the program all-reduces them
// over dp itself, in buckets that overlap its backward, once per step), then
// the gradient norm for clipping and the step program, which scales the
// sums to the clipped mean and updates the forward program's weights in
// place.
//
// Without a pipeline the schedule is gradient accumulation, one stage. On a
// pipeline stage (a plan with a pp axis) it is GPipe's, 1F1B's or, with
// several model chunks per rank (virtual stages), interleaved 1F1B's
// (PipelineSchedule.h). Only the last stage has the loss (broadcast over pp
// for rank 0's log); each stage updates its own parameters, clipped by the
// norm over all stages (each stage's squared norm, all-reduced over pp).
//===----------------------------------------------------------------------===//
#include "runtime/train/Trainer.h"
#include "compiler/plan/Names.h"
#include "runtime/comm/PendingSends.h"
#include "runtime/schedule/AccumulationSchedule.h"
#include "runtime/schedule/PipelineSchedule.h"
#include "runtime/session/InputRoles.h"
#include "runtime/train/GradientClipping.h"
#include "runtime/train/LossLog.h"
#include "runtime/train/MemoryReport.h"
#include "runtime/train/StageRun.h"
#include "runtime/train/TrafficReport.h"
#include "runtime/checkpoint/Checkpoint.h"
#include "llvm/Support/raw_ostream.h"
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>

namespace partita::rt {

static llvm::Error fail(const llvm::Twine &msg) { return llvm::createStringError(llvm::inconvertibleErrorCode(), msg); }

namespace {

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

using Clock = TraceLog::Clock;

class TrainingRun final : public ActionRunner {
public:
  TrainingRun(Session &session, Communicator &world, const TrainOptions &o, TokenFile tokens)
      : session_(session), plan_(session.plan()), o_(o), tokens_(std::move(tokens)), state_(plan_, session.rankPlan().coords, session.device()),
        saver_(o.save, o.keep, world, session.rank(), !o.blockingSave),
        microBatches_(std::max(1, o.microBatches)), profile_(o.profile), trace_(!o.trace.empty()),
        dpSize_(session.axisSize(mesh_axis::kData)), stages_(session.axisSize(mesh_axis::kPipeline)), stage_(session.coordinate(mesh_axis::kPipeline)) {}
  llvm::Error prepare(llvm::StringRef outDir);
  llvm::Error trainAll(llvm::StringRef outDir);
  llvm::Error run(const Action &action) override;

private:
  llvm::Error reduceGradients();
  llvm::Error optimizerStep();
  llvm::Error resume();
  CheckpointRun checkpointRun() const {
    return {o_.data, tokens_.size(), o_.batch, o_.seq, microBatches_, dpSize_};
  }
  StageRun *chunk(const Action &action) {
    return action.chunk >= 0 && action.chunk < static_cast<int64_t>(chunks_.size()) ? &chunks_[action.chunk] : nullptr;
  }

  Session &session_;
  const Plan &plan_;
  const TrainOptions &o_;
  TokenFile tokens_;
  /// Progress, loss scaler and every tensor a checkpoint keeps.
  TrainState state_;
  CheckpointWriter saver_;
  int64_t microBatches_;
  std::unique_ptr<Schedule> schedule_;
  StepProfile profile_;
  TraceLog trace_;
  int64_t dpSize_, stages_, stage_;
  std::optional<BatchSampler> sampler_;
  ForwardFeeds feeds_;
  /// The stages this rank runs: one, or with virtual stages one per model chunk.
  std::vector<StageRun> chunks_;
  std::optional<LossLog> log_; // rank 0
  // The step being run (1-based).
  int step_ = 0;
  float loss_ = 0;
  bool skipped_ = false;
  std::optional<LossScaler> &scaler_ = state_.scaler; // fp16 plans
  /// The loss scale the next step's backwards read (input loss_scale).
  void setLossScale() {
    feeds_.constants[optimizer_io::kLossScale] = Tensor::fromDoubles(DType::F32, {}, {scaler_->scale()});
    for (StageRun &c : chunks_) // a prepared chunk holds it on the device
      c.setLossScale(static_cast<float>(scaler_->scale()));
  }
  static std::string formatScale(double s) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", s);
    return buf;
  }
};

llvm::Error TrainingRun::prepare(llvm::StringRef outDir) {
  // The rank's model chunks: stage s of the pp axis holds global stages s, s + pp, ...
  const int64_t chunks = plan_.virtualStages, global = plan_.globalStages();
  for (int64_t k = 0; k < chunks; ++k) {
    int64_t stage = stage_ + k * stages_;
    auto find = [&](const char *base) { return session_.program(chunkProgram(base, stage, plan_)); };
    StagePrograms p{find(kForwardProgram), find(optimizer_io::kBackward), find(optimizer_io::kStep), find(optimizer_io::kGradNorm)};
    if (!p.forward || !p.backward || !p.step || !p.gradNorm)
      return fail("the plan gives rank " + llvm::Twine(session_.rank()) + " no forward, backward, grad_norm and " +
                  "step programs" + (chunks > 1 ? " for stage " + llvm::Twine(stage) : llvm::Twine("")) +
                  ": compile it with --train");
    chunks_.emplace_back(session_, o_, p, stage, stage + 1 == global, profile_, trace_);
  }
  std::vector<TensorSpec> specs;
  if (stages_ > 1)
    specs = plan_.inputs;
  else
    for (const auto &in : chunks_.front().programs().front().second->inputs())
      specs.push_back({in.name, in.type});
  auto feeds = forwardFeeds(specs, o_);
  if (!feeds)
    return feeds.takeError();
  feeds_ = std::move(*feeds);
  if (plan_.precision == "fp16") { // every rank feeds the scale; the last stage's backward reads it
    scaler_.emplace(o_.lossScale);
    setLossScale();
  }
  PipelineKind kind = PipelineKind::OneFOneB;
  parsePipelineKind(o_.schedule, kind); // checked by launch
  if (chunks > 1 && microBatches_ % stages_ != 0)
    return fail("interleaved 1F1B runs micro-batches " + llvm::Twine(stages_) + " at a time: " +
                llvm::Twine(microBatches_) + " is no multiple");
  if (chunks > 1)
    schedule_ = std::make_unique<InterleavedSchedule>(stages_, stage_, chunks, microBatches_);
  else if (stages_ > 1)
    schedule_ = std::make_unique<PipelineSchedule>(kind, stages_, stage_, microBatches_);
  else
    schedule_ = std::make_unique<AccumulationSchedule>(microBatches_);
  if (session_.rank() == 0) {
    auto log = LossLog::open(outDir, o_.steps, o_.progressBar);
    if (!log)
      return log.takeError();
    log_.emplace(std::move(*log));
  }
  // The step's programs run one after another: one arena serves those on
  // each device (the step's is the host's under optimizer offload).
  std::vector<std::pair<Device *, std::vector<Program *>>> byDevice;
  for (const StageRun &c : chunks_)
    for (const auto &[name, p] : c.programs()) {
      auto it = std::find_if(byDevice.begin(), byDevice.end(), [&](const auto &d) { return d.first == &p->device(); });
      if (it == byDevice.end())
        it = byDevice.insert(byDevice.end(), {&p->device(), {}});
      it->second.push_back(p);
    }
  for (auto &[device, programs] : byDevice)
    if (auto err = programs.front()->shareArena(llvm::ArrayRef<Program *>(programs).drop_front()))
      return err;
  for (StageRun &c : chunks_)
    if (auto err = c.prepare(feeds_, state_))
      return err;
  state_.progress.seed = o_.seed;
  if (!o_.resume.empty())
    if (auto err = resume())
      return err;
  if (!o_.save.empty())
    if (auto err = saver_.reserve(state_))
      return err;
  // The sampler goes on from the sequences drawn so far.
  BatchLayout layout{o_.batch, o_.seq, microBatches_, dpSize_, session_.coordinate(mesh_axis::kData),
                     state_.progress.step, state_.progress.samples};
  auto sampler = BatchSampler::create(tokens_, layout, o_.seed);
  if (!sampler)
    return sampler.takeError();
  sampler_.emplace(*sampler);
  return llvm::Error::success();
}

llvm::Error TrainingRun::resume() {
  auto folder = resolveCheckpoint(o_.resume);
  if (!folder)
    return folder.takeError();
  if (auto err = loadCheckpoint(state_, *folder, checkpointRun()))
    return err;
  if (state_.progress.step >= o_.steps)
    return fail(*folder + " is at step " + llvm::Twine(state_.progress.step) + ": --steps " + llvm::Twine(o_.steps) +
                " (the run's total) leaves nothing to train");
  for (StageRun &c : chunks_)
    c.stateRestored();
  if (scaler_)
    setLossScale();
  if (session_.rank() == 0)
    llvm::outs() << "partita: resumed from " << *folder << " at step " << state_.progress.step << " ("
                 << state_.progress.updates << " updates)\n";
  return llvm::Error::success();
}

llvm::Error TrainingRun::run(const Action &action) {
  Clock::time_point start = Clock::now();
  switch (action.kind) {
  case Action::Kind::Forward:
  case Action::Kind::Backward: {
    StageRun *c = chunk(action);
    if (!c)
      return fail("the schedule names model chunk " + llvm::Twine(action.chunk) + "; this rank holds " +
                  llvm::Twine(chunks_.size()));
    // The copies of sends the receivers took are freed before each op
    // (otherwise the next send frees them): GPipe's first stage holds no
    // copy through its backwards.
    if (auto err = PendingSends::process().reap())
      return err;
    if (action.kind == Action::Kind::Forward)
      return c->forward(step_, action.microBatch, *sampler_);
    return c->backward(step_, action.microBatch);
  }
  case Action::Kind::ReduceGradients: {
    llvm::Error err = reduceGradients();
    trace_.slice("reduce gradients", -1, "communication", start, Clock::now());
    return err;
  }
  case Action::Kind::OptimizerStep: {
    llvm::Error err = optimizerStep();
    trace_.slice("optimizer step", -1, "compute", start, Clock::now());
    return err;
  }
  }
  return fail(llvm::Twine("the training loop cannot run ") + actionName(action.kind));
}

llvm::Error TrainingRun::reduceGradients() {
  // The program reduced them (and the loss: the global batch's) in its last
  // micro-batch; what is left is the mean over the micro-batches.
  double loss = 0;
  for (const StageRun &c : chunks_)
    loss += c.lossSum();
  loss_ = static_cast<float>(loss / static_cast<double>(microBatches_));
  if (stages_ > 1) { // the sends of this step are done; the last stage's loss for every rank's log
    if (auto err = PendingSends::process().drain())
      return err;
    // A weight two stages hold: both step with the sum of their gradients.
    for (StageRun &c : chunks_)
      if (auto err = c.sendSharedGradients())
        return err;
    for (StageRun &c : chunks_)
      if (auto err = c.addSharedGradients())
        return err;
    if (auto err = session_.group(mesh_axis::kPipeline)->broadcast(&loss_, 1, DType::F32, static_cast<int>(stages_ - 1)))
      return err;
    profile_.phase("pipeline flush");
  }
  return llvm::Error::success();
}

llvm::Error TrainingRun::optimizerStep() {
  // Gradients are sums over M micro-batches (each the global batch's mean
  // gradient): the step program scales them by 1/M and the clipping
  // coefficient, the grad_norm programs give the sums' norm.
  double coef = 1.0 / static_cast<double>(microBatches_);
  // fp16: the gradients are the loss scale times the loss's; one that
  // overflowed makes the norm infinite on every rank (it is all-reduced).
  if (scaler_)
    coef /= scaler_->scale();
  // A non-finite loss stops the run under every precision: the loss scale
  // multiplies only the backward's seed, so no lower scale can cure a forward
  // that diverged (fp16 used to skip such steps as overflows, for ever).
  if (!std::isfinite(loss_) && !o_.skipNonfinite)
    return fail("step " + llvm::Twine(step_) + ": the loss is not finite (" + std::to_string(loss_) +
                "); stopping (--skip-nonfinite skips such steps)");
  if (o_.clipNorm > 0 || scaler_) {
    double squares = 0; // over this rank's chunks, then over the stages
    for (StageRun &c : chunks_) {
      auto sq = c.squaredGradientNorm();
      if (!sq)
        return sq.takeError();
      squares += *sq;
    }
    if (stages_ > 1) {
      float total = static_cast<float>(squares);
      if (auto err = session_.group(mesh_axis::kPipeline)->allReduce(&total, 1, DType::F32))
        return err;
      squares = total;
    }
    double norm = std::sqrt(squares) * coef;
    if (scaler_ && !std::isfinite(norm) && !scaler_->canBackOff() && !o_.skipNonfinite)
      return fail("step " + llvm::Twine(step_) + ": the fp16 gradients overflowed (norm not finite, loss " +
                  std::to_string(loss_) + ") " +
                  (scaler_->dynamic() ? "at the minimum loss scale " + formatScale(scaler_->scale()) +
                                            " (--min-loss-scale), which cannot go lower"
                                      : "under the static loss scale " + formatScale(scaler_->scale()) +
                                            " (--loss-scale)") +
                  ": training diverged; stopping (--skip-nonfinite skips such steps)");
    if (scaler_ && !std::isfinite(norm)) {
      double was = scaler_->scale(), next = scaler_->update(true);
      if (log_)
        log_->skipped(step_, ": fp16 gradient overflow, update skipped; loss scale " + formatScale(was) + " -> " +
                                 formatScale(next));
      setLossScale();
      skipped_ = true;
    } else if (!std::isfinite(norm)) {
      if (!o_.skipNonfinite)
        return fail("step " + llvm::Twine(step_) + ": the gradient norm is not finite; stopping");
      if (log_)
        log_->skipped(step_, ": gradient norm not finite, update skipped");
      skipped_ = true;
    } else if (o_.clipNorm > 0) {
      coef *= clipCoefficient(norm, o_.clipNorm);
    }
  }
  if (scaler_ && !skipped_) {
    scaler_->update(false);
    setLossScale();
  }
  if (!skipped_ && !std::isfinite(loss_)) { // --skip-nonfinite: without it the run stopped above
    if (log_)
      log_->skipped(step_, "  loss " + std::to_string(loss_) + ": not finite, update skipped");
    skipped_ = true;
  }
  profile_.phase("gradient norm");
  // A skipped step advances neither AdamW's step count (its bias correction)
  // nor the learning-rate schedule, as in torch and DeepSpeed.
  int64_t update = state_.progress.updates + (skipped_ ? 0 : 1);
  float lr = static_cast<float>(o_.lr * lrFactor(o_.lrSchedule, static_cast<int>(update - 1), o_.steps));
  for (StageRun &c : chunks_) // a skipped step still keeps shared weights' copies in step
    if (auto err = c.step(static_cast<int>(update), lr, static_cast<float>(coef), skipped_))
      return err;
  state_.progress.updates = update;
  profile_.phase("optimizer step");
  return llvm::Error::success();
}

llvm::Error TrainingRun::trainAll(llvm::StringRef outDir) {
  auto start = Clock::now();
  const int firstStep = static_cast<int>(state_.progress.step) + 1;
  std::vector<int64_t> saves = o_.save.empty() ? std::vector<int64_t>{} : checkpointSteps(firstStep - 1, o_.steps, o_.saveInterval);
  for (step_ = firstStep; step_ <= o_.steps; ++step_) {
    auto stepStart = Clock::now();
    profile_.beginStep(step_);
    skipped_ = false;
    if (auto err = runStep(*schedule_, *this))
      return err;
    // The step is done when the devices are (a queueing one returns at launch): its
    // time, and a kernel's failure, known here at the latest.
    for (Device *d : {&session_.device(), &session_.optimizerDevice()})
      if (auto err = d->finishWork())
        return err;
    trace_.slice("step", step_, "step", stepStart, Clock::now());
    TrainProgress &progress = state_.progress;
    progress.step = step_;
    progress.samples += int64_t{o_.batch} * microBatches_ * dpSize_;
    progress.skipped += skipped_;
    Clock::time_point t = Clock::now();
    bool saving = std::find(saves.begin(), saves.end(), step_) != saves.end();
    if (auto err = saving ? saver_.save(state_, checkpointRun()) : saver_.poll())
      return err;
    if (saving) // the snapshot (and with --blocking-save the writing)
      trace_.slice("checkpoint", step_, "checkpoint", t, Clock::now());
    if (skipped_)
      continue;
    if (step_ == firstStep) // the first step includes one-time set-up
      for (const StageRun &c : chunks_)
        for (const auto &[name, p] : c.programs())
          p->clearProfile();
    if (log_) {
      double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
      double secs = std::chrono::duration<double>(Clock::now() - stepStart).count();
      int64_t tokens = int64_t{o_.batch} * o_.seq * microBatches_ * dpSize_;
      double tps = static_cast<double>(tokens) / std::max(secs, 1e-9);
      if (auto err = log_->record(step_, loss_, tps, elapsed))
        return err;
    }
  }
  if (log_ && (scaler_ || state_.progress.skipped > 0)) // every fp16 run says how many of its steps did not update
    llvm::outs() << "partita: " << state_.progress.skipped << " of " << o_.steps << " steps skipped their update"
                 << (scaler_ ? " (fp16 gradient overflow" + std::string(o_.skipNonfinite ? " or --skip-nonfinite)" : ")")
                             : std::string(" (--skip-nonfinite)"))
                 << "\n";
  std::vector<std::pair<std::string, Program *>> programs;
  for (const StageRun &c : chunks_)
    for (auto &named : c.programs())
      programs.push_back(named);
  if (o_.profile && session_.rank() == 0 && o_.steps > 1) {
    std::vector<std::pair<const char *, const Program *>> rows;
    for (const auto &[name, p] : programs)
      rows.push_back({name.c_str(), p});
    profile_.print(llvm::outs(), o_.steps, rows, o_.profileByNode);
  }
  if (o_.profile && session_.rank() == 0) {
    // The rank's whole shards (a ZeRO-3 rank holds a part of each), in the
    // gradients' type: mixed precision's half (the paper's psi in fp16).
    bool half = session_.plan().precision != "fp32";
    double paramBytes = 0;
    for (const StageRun &c : chunks_)
      for (const TensorType &t : c.paramTypes())
        paramBytes += static_cast<double>(t.numel()) * static_cast<double>(half ? 2 : dtypeSize(t.dtype));
    printTraffic(llvm::outs(), session_, o_.steps, paramBytes);
  }
  if (auto err = PendingSends::process().drain())
    return err;
  if (auto err = saver_.finish()) // the last checkpoint in place
    return err;
  if (trace_.on()) {
    std::string coords;
    for (const MeshAxis &a : plan_.mesh.axes)
      coords += (coords.empty() ? "" : ", ") + a.name + " " + std::to_string(session_.coordinate(a.name));
    std::string track = "rank " + std::to_string(session_.rank()) + (coords.empty() ? "" : " (" + coords + ")");
    if (auto err = trace_.writePart(tracePartsDir(outDir), session_.rank(), track))
      return err;
  }
  if (o_.memory) {
    // The device's memory, and beside it the pipeline's send copies (device memory too).
    const MemoryLedger &ledger = session_.device().ledger();
    printMemoryLine(llvm::outs(), session_.rank(), "measured", ledger.atPeak(), ledger.peak());
    if (plan_.stages() > 1)
      printSendCopiesLine(llvm::outs(), session_.rank(), "measured", ledger.sendCopiesPeak());
    // The step's share in host memory (on cpu it is the device's, counted above).
    if (session_.offloadsOptimizer() && !session_.device().sharesHostMemory()) {
      const MemoryLedger &host = session_.optimizerDevice().ledger();
      printMemoryLine(llvm::outs(), session_.rank(), "measured", host.atPeak(), host.peak(), "host of rank");
    }
  }
  for (const StageRun &c : chunks_)
    if (auto err = c.writeParameters(outDir))
      return err;
  return log_ ? log_->finish() : llvm::Error::success();
}

} // namespace

std::vector<int64_t> checkpointSteps(int64_t first, int64_t last, int64_t interval) {
  std::vector<int64_t> steps;
  for (int64_t s = first + 1; interval > 0 && s < last; ++s)
    if (s % interval == 0)
      steps.push_back(s);
  if (last > first)
    steps.push_back(last);
  return steps;
}

llvm::Error train(Session &session, Communicator &world, const TrainOptions &o, llvm::StringRef outDir) {
  auto tokens = TokenFile::open(o.data, o.dataDtype);
  if (!tokens)
    return tokens.takeError();
  TrainingRun run(session, world, o, std::move(*tokens));
  if (auto err = run.prepare(outDir))
    return err;
  return run.trainAll(outDir);
}

} // namespace partita::rt
