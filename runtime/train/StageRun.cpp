//===- StageRun.cpp -------------------------------------------------------===//
#include "compiler/plan/Names.h"
#include "runtime/train/StageRun.h"
#include "runtime/train/GradientClipping.h"
#include "runtime/train/ParameterOutput.h"
#include <algorithm>
#include <cstdlib>
#include <tuple>

namespace partita::rt {

static llvm::Error fail(const llvm::Twine &msg) { return llvm::createStringError(llvm::inconvertibleErrorCode(), msg); }

using Clock = TraceLog::Clock;

std::string StageRun::chunkSuffix() const {
  int64_t ranksStages = plan_.stages();
  return plan_.virtualStages > 1 ? " (chunk " + std::to_string(stage_ / ranksStages) + ")" : "";
}

std::vector<std::pair<std::string, Program *>> StageRun::programs() const {
  std::string s = chunkSuffix();
  return {{"forward program" + s, p_.forward},
          {"backward program" + s, p_.backward},
          {"optimizer program" + s, p_.step},
          {"gradient norm program" + s, p_.gradNorm}};
}

llvm::Error StageRun::prepare(const ForwardFeeds &feeds, TrainState &state) {
  feeds_ = &feeds;
  Program &fwd = *p_.forward, &bwd = *p_.backward;
  if (plan_.stages() > 1) {
    auto links = StageLinks::create(plan_, stage_, session_.group(mesh_axis::kPipeline), session_.device());
    if (!links)
      return links.takeError();
    links_.emplace(std::move(*links));
    // The outputs each micro-batch keeps in its own buffers (not the loss).
    auto io = plan_.programIO.find(session_.rankPlan().program(chunkProgram(kForwardProgram, stage_, plan_)));
    if (io == plan_.programIO.end() || io->second.outputs.size() != fwd.outputNames().size())
      return fail("plan.json's outputs of this rank's forward program of stage " + llvm::Twine(stage_) +
                  " are not the program's");
    for (size_t i = hasLoss_ ? 1 : 0; i < io->second.outputs.size(); ++i) {
      const TensorType &t = io->second.outputs[i].type;
      bound_.push_back({i, static_cast<size_t>(t.numel()) * dtypeSize(t.dtype)});
    }
    auto taken = takeSet();
    if (!taken)
      return taken.takeError();
    std::unique_ptr<OutputSet> first = std::move(*taken);
    for (size_t k = bound_.size(); k-- > 0;) // those the program cannot write elsewhere are copied
      if (llvm::Error err = fwd.bindOutput(fwd.outputNames()[bound_[k].index], first->buffers[k].data())) {
        llvm::consumeError(std::move(err));
        bound_.erase(bound_.begin() + static_cast<long>(k));
        first->buffers.erase(first->buffers.begin() + static_cast<long>(k));
      }
    freeSets_.push_back(std::move(first));
    // MPI moves a large message only inside MPI calls: the sends and
    // receives (partita.Send, partita.Recv) progress between kernels.
    Communicator *pp = session_.group(mesh_axis::kPipeline);
    fwd.setAfterEachKernel([pp] { pp->progress(); });
    bwd.setAfterEachKernel([pp] { pp->progress(); });
  }
  for (size_t i = 0; i < plan_.params.size(); ++i) {
    if (!plan_.paramStages.empty() && plan_.paramStages[i] != stage_)
      continue;
    paramNames_.push_back(plan_.params[i]);
    paramIndex_.push_back(i);
    if (i < plan_.paramTypes.size())
      paramTypes_.push_back(plan_.paramTypes[i]);
    if (i < plan_.paramPartitioned.size())
      paramPartitioned_.push_back(plan_.paramPartitioned[i]);
  }
  for (const std::string &name : paramNames_) {
    const TensorView *p = fwd.staticTensor(name);
    if (!p)
      return fail("the forward program has no weight '" + name + "'");
    params_.push_back(p);
  }
  // The parameters the step reads and writes: the forward's, or under
  // optimizer offload host copies of them (OptimizerOffload.h).
  std::vector<const TensorView *> stepParams = params_;
  if (session_.offloadsOptimizer()) {
    auto offload = OptimizerOffload::create(session_.device(), session_.optimizerDevice(), params_, paramNames_);
    if (!offload)
      return offload.takeError();
    offload_.emplace(std::move(*offload));
    stepParams = offload_->parameters();
  }
  for (size_t i = 0; i < paramNames_.size(); ++i) {
    // Mixed precision: the step's float32 master copy is what training wrote.
    const TensorView *master = p_.step->staticTensor(optimizer_io::master(paramNames_[i]));
    written_.push_back(master ? master : stepParams[i]);
  }
  for (const auto &c : feeds.constants) {
    // The loss scale changes between steps (setLossScale): a device copy of its own.
    auto on = c.getKey() == optimizer_io::kLossScale
                  ? DeviceTensor::allocate(session_.device(), DType::F32, {}, MemoryCategory::Activations,
                                           "the loss scale")
                  : DeviceTensor::upload(session_.device(), c.getValue(), MemoryCategory::Activations,
                                         "input " + c.getKey());
    if (!on)
      return on.takeError();
    constantFeeds_[c.getKey()] = std::move(*on);
  }
  if (auto scale = feeds.constants.find(optimizer_io::kLossScale); scale != feeds.constants.end())
    setLossScale(static_cast<float>(scale->getValue().toDoubles().front()));
  if (auto err = bindBackwardInputs(feeds))
    return err;
  std::vector<std::string> gradOutputs;
  std::vector<int64_t> numel;
  const auto &outs = bwd.outputNames();
  for (size_t i = 0; i < params_.size(); ++i) {
    gradOutputs.push_back(optimizer_io::gradOutput(paramNames_[i]));
    if (std::find(outs.begin(), outs.end(), gradOutputs.back()) == outs.end())
      return fail("the backward program has no gradient output for '" + paramNames_[i] + "'");
    // Shaped as the step reads it (ZeRO-2: the rank's part of the flat gradient).
    const TensorType *t = p_.step->inputType(optimizer_io::gradient(paramNames_[i]));
    if (!t)
      return fail("the step program has no gradient input for '" + paramNames_[i] + "'");
    numel.push_back(t->numel());
  }
  gradNumel_ = numel;
  for (const std::string &name : links_ ? links_->sharedParameters() : std::vector<std::string>{}) {
    auto it = std::find(paramNames_.begin(), paramNames_.end(), name);
    if (it == paramNames_.end())
      return fail("stage " + llvm::Twine(stage_) + " shares weight '" + name +
                  "' with another stage, but does not update it");
    shared_.push_back(static_cast<size_t>(it - paramNames_.begin()));
  }
  // The state owns the moments (it allocates them where the step runs) and
  // takes over the weights and masters from the programs that compute on
  // them; the offload's host copies of fp32 weights stay the offload's.
  Device &opt = session_.optimizerDevice();
  auto adam = AdamWState::create(opt, *p_.step, paramNames_, stepParams, plan_.optimizer,
                                 [&](size_t i, bool second, const TensorType &type) {
                                   return state.allocate(paramIndex_[i], second ? StateKind::Moment2 : StateKind::Moment1,
                                                         type, &opt);
                                 });
  if (!adam)
    return adam.takeError();
  adam_.emplace(std::move(*adam));
  for (size_t i = 0; i < params_.size(); ++i) {
    const std::string &name = paramNames_[i];
    if (p_.step->staticTensor(optimizer_io::master(name))) {
      auto master = state.adopt(paramIndex_[i], StateKind::Weight, *p_.step, optimizer_io::master(name),
                                MemoryCategory::OptimizerStates);
      if (!master)
        return master.takeError();
    } else if (written_[i] != params_[i]) { // the offload's host copy
      if (auto err = state.add(paramIndex_[i], StateKind::Weight, *written_[i], &opt))
        return err;
    }
    // The forward's weight: the parameter itself, or a copy of the master or host one.
    auto forward = state.adopt(paramIndex_[i], written_[i] == params_[i] ? StateKind::Weight : StateKind::HalfWeight,
                               fwd, name, MemoryCategory::Parameters);
    if (!forward)
      return forward.takeError();
  }
  auto grads =
      GradientAccumulator::create(session_.device(), hasLoss_ ? &fwd : nullptr, bwd, std::move(gradOutputs), std::move(numel), microBatches_);
  if (!grads)
    return grads.takeError();
  grads_ = std::move(*grads);
  for (Program *p : {p_.forward, p_.backward, p_.step, p_.gradNorm}) {
    p->setProfiling(o_.profile, o_.profileByNode);
    // "AllReduce tp", "Recv pp": the collectives on the rank's second track;
    // the time a program waited for a pipeline receive on its own ("wait",
    // inside the forward or backward: the bubble).
    if (trace_.on())
      p->setCollectiveObserver(
          [this](const Node &n, Clock::time_point start, Clock::time_point waitFrom, Clock::time_point end) {
            std::string name = n.op() + " " + n.stringAttr("axis", "");
            trace_.collective(name, start, end);
            if (n.is("Recv", "partita"))
              trace_.slice("wait " + name, -1, "wait", waitFrom, end);
          });
  }
  fwd.setOverlapCollectives(!o_.noOverlap);
  bwd.setOverlapCollectives(!o_.noOverlap);
  return llvm::Error::success();
}

void StageRun::setLossScale(float scale) {
  auto it = constantFeeds_.find(optimizer_io::kLossScale);
  if (it != constantFeeds_.end())
    session_.device().copyFromHost(it->getValue().data(), &scale, sizeof scale);
}

void StageRun::stateRestored() {
  for (Program *p : {p_.forward, p_.backward, p_.step, p_.gradNorm})
    p->weightsChanged();
}

llvm::Expected<std::unique_ptr<StageRun::OutputSet>> StageRun::takeSet() {
  if (!freeSets_.empty()) {
    std::unique_ptr<OutputSet> set = std::move(freeSets_.back());
    freeSets_.pop_back();
    return std::move(set);
  }
  auto set = std::make_unique<OutputSet>();
  for (const BoundOutput &b : bound_) {
    auto buffer = DeviceTensor::allocate(session_.device(), DType::U8, {static_cast<int64_t>(b.bytes)},
                                         MemoryCategory::Activations, "a micro-batch's saved activations");
    if (!buffer)
      return buffer.takeError();
    set->buffers.push_back(std::move(*buffer));
  }
  return std::move(set);
}

llvm::Error StageRun::bindBackwardInputs(const ForwardFeeds &feeds) {
  const Program &fwd = *p_.forward;
  const auto &outs = fwd.outputNames();
  for (const auto &in : p_.backward->inputs()) {
    BackwardInput b{in.name};
    if (auto it = std::find(outs.begin(), outs.end(), in.name); it != outs.end())
      b.savedIndex = static_cast<int>(it - outs.begin());
    else if (!(b.weight = fwd.staticTensor(in.name)) && in.name != feeds.idsName && in.name != feeds.labelsName &&
             !feeds.constants.count(in.name))
      return fail("the backward program's input '" + in.name +
                  "' is no forward output, forward weight or input of the micro-batch");
    bwdInputs_.push_back(std::move(b));
  }
  return llvm::Error::success();
}

llvm::Error StageRun::forward(int step, int64_t micro, BatchSampler &sampler) {
  Program &fwd = *p_.forward;
  // Global batch of a step: dp x micro-batches x B sequences; this replica
  // takes its dp block, micro-batch by micro-batch.
  std::vector<int64_t> ids, labels;
  if (auto err = sampler.fill(step, micro, plan_.vocab, ids, labels))
    return err;
  if (!links_)
    inFlight_.clear(); // one micro-batch at a time: its outputs are the program's buffers
  InFlight &m = inFlight_[micro];
  m.ids = Tensor::fromInts(DType::I64, {o_.batch, o_.seq}, ids);
  m.labels = Tensor::fromInts(DType::I64, {o_.batch, o_.seq}, labels);
  for (auto [host, on, what] : {std::tuple{&m.ids, &m.deviceIds, "token ids"}, {&m.labels, &m.deviceLabels, "labels"}}) {
    auto up = DeviceTensor::upload(session_.device(), *host, MemoryCategory::Activations, what);
    if (!up)
      return up.takeError();
    *on = std::move(*up);
  }
  llvm::StringMap<TensorView> &feeds = m.feeds;
  feeds[feeds_->idsName] = m.deviceIds.view();
  feeds[feeds_->labelsName] = m.deviceLabels.view();
  for (const auto &c : constantFeeds_)
    feeds[c.getKey()] = c.getValue().view();
  if (links_) {
    auto taken = takeSet(); // this micro-batch's own output buffers
    if (!taken)
      return taken.takeError();
    m.set = std::move(*taken);
    for (size_t k = 0; k < bound_.size(); ++k)
      if (auto err = fwd.bindOutput(fwd.outputNames()[bound_[k].index], m.set->buffers[k].data()))
        return err;
  }
  Clock::time_point t1 = Clock::now();
  grads_->beforeForward(micro);
  llvm::StringMap<TensorView> reads; // a stage reads some of the model's inputs
  for (const auto &in : fwd.inputs()) {
    auto it = feeds.find(in.name);
    if (it == feeds.end())
      return fail("stage " + llvm::Twine(stage_) + "'s forward reads '" + in.name +
                  "', which is no input of the micro-batch");
    reads[in.name] = it->second;
  }
  auto outs = fwd.run(reads);
  if (!outs)
    return outs.takeError();
  if (hasLoss_)
    grads_->afterLoss(micro, *outs);
  profile_.phase("forward");
  trace_.slice("forward" + chunkSuffix(), micro, "compute", t1, Clock::now());
  if (!links_) {
    m.outputs = std::move(*outs);
    return llvm::Error::success();
  }
  m.outputs = *outs;
  m.copies.reserve(outs->size());
  for (size_t i = 0, k = 0; i < outs->size(); ++i) { // the rest the next forward overwrites
    if (k < bound_.size() && bound_[k].index == i) {
      ++k;
      continue;
    }
    auto copy = DeviceTensor::copyOf(session_.device(), (*outs)[i], MemoryCategory::Activations,
                                     "a micro-batch's saved activation");
    if (!copy)
      return copy.takeError();
    m.copies.push_back(std::move(*copy));
    m.outputs[i] = m.copies.back().view();
  }
  return llvm::Error::success();
}

llvm::Error StageRun::backward(int step, int64_t micro) {
  auto it = inFlight_.find(micro);
  if (it == inFlight_.end())
    return fail("backward of micro-batch " + llvm::Twine(micro) + " before its forward");
  InFlight &m = it->second;
  Clock::time_point t1 = Clock::now();
  llvm::StringMap<TensorView> feeds;
  for (const BackwardInput &b : bwdInputs_)
    feeds[b.name] = b.savedIndex >= 0 ? m.outputs[b.savedIndex] : b.weight ? *b.weight : m.feeds.lookup(b.name);
  grads_->beforeBackward(micro);
  auto outs = p_.backward->run(feeds);
  if (!outs)
    return outs.takeError();
  if (!sizesChecked_) { // the run's first backward (a resumed run's starts after step 1)
    if (auto err = grads_->checkSizes(*outs))
      return err;
    sizesChecked_ = true;
  }
  grads_->afterGradients(micro, *outs);
  profile_.phase("backward");
  trace_.slice("backward" + chunkSuffix(), micro, "compute", t1, Clock::now());
  if (!links_)
    return llvm::Error::success();
  freeSets_.push_back(std::move(m.set));
  inFlight_.erase(it);
  return llvm::Error::success();
}

llvm::Expected<double> StageRun::squaredGradientNorm() {
  std::vector<TensorView> grads;
  for (size_t i = 0; i < params_.size(); ++i)
    grads.push_back(gradient(i));
  auto norm = globalGradientNorm(*p_.gradNorm, paramNames_, params_, grads);
  if (!norm)
    return norm.takeError();
  return *norm * *norm;
}

llvm::Error StageRun::step(int step, float lr, float gradScale, bool skip) {
  if (!skip) {
    std::vector<TensorView> grads;
    for (size_t i = 0; i < params_.size(); ++i)
      grads.push_back(gradient(i));
    if (offload_) {
      auto down = offload_->gradientsDown(grads);
      if (!down)
        return down.takeError();
      grads = std::move(*down);
    }
    if (auto err = adam_->apply(step, lr, gradScale, grads))
      return err;
    if (offload_)
      offload_->parametersUp();
    p_.forward->weightsChanged();
  }
  return llvm::Error::success();
}

llvm::Error StageRun::sendSharedGradients() {
  for (size_t i : shared_)
    if (auto err = links_->sendSharedGradient(paramNames_[i], gradient(i)))
      return err;
  return llvm::Error::success();
}

llvm::Error StageRun::addSharedGradients() {
  for (size_t i : shared_)
    if (auto err = links_->addSharedGradient(paramNames_[i], gradient(i)))
      return err;
  return llvm::Error::success();
}

llvm::Error StageRun::writeParameters(llvm::StringRef outDir) const {
  return writeParameterShards(session_.optimizerDevice(), outDir, session_.rank(), paramNames_, written_, paramTypes_, paramPartitioned_,
                              session_.axisSize(mesh_axis::kData) > 1 ? session_.group(mesh_axis::kData) : nullptr);
}

} // namespace partita::rt
