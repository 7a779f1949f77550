//===- Program.cpp --------------------------------------------------------===//
#include "compiler/ops/OpRegistry.h"
#include "runtime/executor/Program.h"
#include "runtime/executor/Scratch.h"
#include "runtime/executor/FusionPlan.h"
#include "runtime/kernels/KernelRegistry.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include <algorithm>
#include <chrono>

namespace partita::rt {



namespace {
llvm::Error loadError(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

/// An arena of `bytes` on `device`, freed with its last user.
llvm::Expected<std::shared_ptr<void>> allocateArena(Device &device, size_t bytes) {
  void *arena = device.allocate(bytes);
  if (!arena)
    return loadError("out of device memory allocating a " + llvm::Twine(bytes) + "-byte arena");
  device.ledger().charge(MemoryCategory::Activations, bytes);
  return std::shared_ptr<void>(arena, [&device, bytes](void *a) {
    device.deallocate(a);
    device.ledger().release(MemoryCategory::Activations, bytes);
  });
}

} // namespace

Program::~Program() {
  for (size_t i = 0; i < statics_.size(); ++i)
    if (i >= releasedStatic_.size() || !releasedStatic_[i])
      device_.deallocate(statics_[i]);
  for (void *p : outputBlocks_)
    device_.deallocate(p);
  for (size_t i = 0; i < outputBuffers_.size(); ++i)
    if (ownsOutputBuffer_[i] && outputBuffers_[i])
      device_.deallocate(outputBuffers_[i]);
}

llvm::Expected<std::unique_ptr<Program>> Program::load(const Graph &g, Device &device, const RuntimeEnv *env,
                                                       bool readWeights) {
  std::unique_ptr<Program> p(new Program(device));
  p->staticsCharge_.setLedger(device.ledger()); // the weights are memory of `device`
  p->env_ = env;
  llvm::DenseMap<const Value *, int> slotOf;
  auto newSlot = [&](const Value *v, Home home, size_t index) {
    Slot s;
    s.home = home;
    s.index = index;
    s.view.dtype = v->type().dtype;
    s.view.shape = v->type().shape;
    p->slots_.push_back(s);
    slotOf[v] = static_cast<int>(p->slots_.size() - 1);
    return slotOf[v];
  };
  for (size_t i = 0; i < g.inputs().size(); ++i) {
    const Value *in = g.inputs()[i];
    if (!in->type().isStatic())
      return loadError("input '" + in->name() + "' has no static shape");
    p->inputSpecs_.push_back({in->name(), in->type()});
    newSlot(in, Home::Input, i);
  }
  p->boundInputs_.assign(g.inputs().size(), nullptr);

  llvm::DenseMap<const Value *, size_t> outputIndex;
  for (const Value *out : g.outputs()) {
    p->outputNames_.push_back(out->name());
    if (!outputIndex.count(out) && out->definingNode() && !out->definingNode()->is("Weight") &&
        !out->definingNode()->is("Constant")) {
      // Its buffer is made at the first run, unless the caller binds one first.
      outputIndex[out] = p->outputBuffers_.size();
      p->outputBuffers_.push_back(nullptr);
      p->outputBufferBytes_.push_back(std::max<size_t>(1, out->type().numel() * dtypeSize(out->type().dtype)));
      p->ownsOutputBuffer_.push_back(true);
      p->outputCharges_.emplace_back(device.ledger(), MemoryCategory::Activations, 0);
      p->stats_.outputBytes += out->type().numel() * dtypeSize(out->type().dtype);
    }
  }

  const KernelRegistry &registry = KernelRegistry::get();
  const FusionPlan fusion(g, device.kind());
  llvm::DenseSet<const Node *> absorbed; // epilogues folded into their producer's step
  for (const Node *n : g.nodes()) {
    if (const ElementwiseCluster *cluster = fusion.clusterAt(n)) {
      const ElementwiseCluster &cl = *cluster;
      auto made = registry.clusterFusion(device.kind())->make(cl);
      if (!made)
        return made.takeError();
      Step step{n, std::move(*made), {}, {}, "fused elementwise"};
      for (const Value *in : cl.inputs) {
        if (!slotOf.count(in))
          return loadError("node " + n->describe() + ": fused cluster input '" + in->name() +
                           "' is not computed before the cluster runs");
        step.inputs.push_back(slotOf.lookup(in));
      }
      for (const Value *out : cl.outputs) {
        auto oi = outputIndex.find(out);
        step.outputs.push_back(oi != outputIndex.end() ? newSlot(out, Home::Output, oi->second)
                                                       : newSlot(out, Home::Arena, 0));
      }
      p->steps_.push_back(std::move(step));
      continue;
    }
    if (absorbed.count(n) || fusion.runElsewhere(n))
      continue;
    if (n->is("Weight") && !readWeights) {
      const TensorType &t = n->output()->type();
      size_t bytes = static_cast<size_t>(t.numel()) * dtypeSize(t.dtype);
      void *buf = device.allocate(std::max<size_t>(1, bytes));
      if (!buf)
        return loadError("out of device memory placing " + n->describe());
      p->statics_.push_back(buf);
      p->stats_.weightBytes += bytes;
      p->staticsCharge_.resize(p->stats_.weightBytes);
      p->staticByName_[n->output()->name()] = TensorView{t.dtype, t.shape, buf};
      newSlot(n->output(), Home::Static, p->statics_.size() - 1);
      continue;
    }
    if (hasTrait(*n, OpTrait::Source)) {
      Tensor value;
      if (n->is("Weight")) {
        auto w = g.weights.load(n->stringAttr("name", ""));
        if (!w)
          return w.takeError();
        value = *w;
      } else {
        value = *constantValue(n->output());
      }
      void *buf = device.allocate(std::max<size_t>(1, value.byteSize()));
      if (!buf)
        return loadError("out of device memory placing " + n->describe());
      device.copyFromHost(buf, value.data(), value.byteSize());
      p->statics_.push_back(buf);
      p->stats_.weightBytes += value.byteSize();
      p->staticsCharge_.resize(p->stats_.weightBytes);
      p->staticByName_[n->output()->name()] = TensorView{value.dtype(), value.shape(), buf};
      newSlot(n->output(), Home::Static, p->statics_.size() - 1);
      continue;
    }
    // A view's result aliases its input (graph outputs keep their own buffer).
    if (hasTrait(*n, OpTrait::View) && n->numOutputs() == 1 && !outputIndex.count(n->output()) && n->input(0) &&
        slotOf.count(n->input(0))) {
      int src = slotOf.lookup(n->input(0));
      newSlot(n->output(), Home::Arena, 0);
      p->slots_.back().aliasOf = src;
      continue;
    }
    const Node *last = n; // the node whose results this step writes
    std::unique_ptr<Kernel> kernel;
    std::vector<const Node *> producers(n->numInputs(), nullptr);
    for (size_t k = 0; k < n->numInputs(); ++k)
      producers[k] = fusion.readThrough(*n, k);
    bool fusedOperands = std::any_of(producers.begin(), producers.end(), [](const Node *p) { return p; });
    const Node *epilogue = fusion.epilogue(*n);
    if (fusedOperands) {
      const Node *producer = *std::find_if(producers.begin(), producers.end(), [](const Node *p) { return p; });
      const OperandFusionFactory &make =
          *registry.findOperandFusion(n->qualifiedOp(), producer->qualifiedOp(), device.kind());
      auto made = make(*n, producers, epilogue);
      if (!made && epilogue) { // without the epilogue, which then runs by itself
        llvm::consumeError(made.takeError());
        epilogue = nullptr;
        made = make(*n, producers, nullptr);
      }
      if (!made)
        return made.takeError();
      kernel = std::move(*made);
      if (epilogue) {
        absorbed.insert(epilogue);
        last = epilogue;
      }
    } else if (epilogue) {
      auto fused = (*registry.findEpilogue(n->qualifiedOp(), epilogue->qualifiedOp(), device.kind()))(*n, *epilogue);
      if (fused) {
        kernel = std::move(*fused);
        absorbed.insert(epilogue);
        last = epilogue;
      } else {
        llvm::consumeError(fused.takeError()); // fall back to two kernels
      }
    }
    if (!kernel) {
      const KernelFactory *factory = registry.find(n->qualifiedOp(), device.kind());
      if (!factory)
        return loadError("node " + n->describe() + ": no " + device.kind().name() +
                         " kernel for this operator");
      auto made = (*factory)(*n);
      if (!made)
        return made.takeError();
      kernel = std::move(*made);
    }
    Step step{n, std::move(kernel), {}, {}, {}};
    for (size_t k = 0; k < n->numInputs(); ++k) {
      const Value *in = fusion.operandValue(*n, k);
      step.inputs.push_back(in ? slotOf.lookup(in) : -1);
    }
    for (const Value *out : last->outputs()) {
      auto it = outputIndex.find(out);
      step.outputs.push_back(it != outputIndex.end() ? newSlot(out, Home::Output, it->second)
                                                     : newSlot(out, Home::Arena, 0));
    }
    p->steps_.push_back(std::move(step));
  }
  p->stats_.numKernels = p->steps_.size();

  auto rootOf = [&](int id) {
    while (id >= 0 && p->slots_[id].aliasOf >= 0)
      id = p->slots_[id].aliasOf;
    return id;
  };
  // Liveness of arena slots over step indices (a view's readers keep the
  // viewed buffer alive), then one placement.
  std::vector<BufferRequest> requests;
  std::vector<int> requestSlot;
  llvm::DenseMap<int, size_t> requestOf;
  for (size_t s = 0; s < p->steps_.size(); ++s) {
    for (int out : p->steps_[s].outputs)
      if (p->slots_[out].home == Home::Arena) {
        requestOf[out] = requests.size();
        requests.push_back({p->slots_[out].view.bytes(), static_cast<int64_t>(s), static_cast<int64_t>(s)});
        requestSlot.push_back(out);
      }
    for (int in : p->steps_[s].inputs) {
      in = rootOf(in);
      auto it = requestOf.find(in);
      if (in >= 0 && it != requestOf.end())
        requests[it->second].lastStep = static_cast<int64_t>(s);
    }
  }
  MemoryPlan plan = planMemory(requests, Device::alignment());
  for (size_t r = 0; r < requests.size(); ++r)
    p->slots_[requestSlot[r]].index = plan.offsets[r];
  for (Slot &slot : p->slots_)
    if (slot.aliasOf >= 0) {
      const Slot &root = p->slots_[rootOf(slot.aliasOf)];
      slot.home = root.home;
      slot.index = root.index;
    }
  for (const Step &step : p->steps_)
    p->scratchLayout_.add(step.kernel->scratch(), step.kernel->isAsync());
  p->stats_.arenaBytes = plan.arenaBytes;
  p->stats_.lowerBoundBytes = plan.lowerBoundBytes; // the arena is made at the first run or by shareArena
  p->outputsOfSlot_.resize(p->slots_.size());
  for (const Value *out : g.outputs()) {
    p->outputsOfSlot_[slotOf.lookup(out)].push_back(p->outputSlots_.size());
    p->outputSlots_.push_back(slotOf.lookup(out));
  }
  return p;
}

llvm::Error Program::shareArena(llvm::ArrayRef<Program *> others) {
  size_t bytes = stats_.arenaBytes;
  for (const Program *o : others) {
    if (&o->device_ != &device_)
      return loadError("programs on different devices cannot share an arena");
    bytes = std::max(bytes, o->stats_.arenaBytes);
  }
  if (bytes && (!arena_ || bytes > arenaBytes_)) {
    auto arena = allocateArena(device_, bytes);
    if (!arena)
      return arena.takeError();
    arena_ = std::move(*arena);
    arenaBytes_ = bytes;
  }
  if (!scratch_)
    scratch_ = std::make_shared<ScratchMemory>(device_);
  for (Program *o : others) {
    o->arena_ = arena_;
    o->arenaBytes_ = arenaBytes_;
    o->scratch_ = scratch_;
  }
  return llvm::Error::success();
}

llvm::Error Program::bindOutput(llvm::StringRef name, void *buffer) {
  for (size_t i = 0; i < outputNames_.size(); ++i) {
    if (outputNames_[i] != name)
      continue;
    const Slot &slot = slots_[outputSlots_[i]];
    if (slot.home != Home::Output || slot.aliasOf >= 0)
      return loadError("output '" + name + "' is not computed into a buffer of its own (a weight, constant or input)");
    if (ownsOutputBuffer_[slot.index] && outputBuffers_[slot.index])
      device_.deallocate(outputBuffers_[slot.index]);
    outputBuffers_[slot.index] = buffer;
    ownsOutputBuffer_[slot.index] = false;
    outputCharges_[slot.index].resize(0); // the caller's buffer is the caller's to count
    return llvm::Error::success();
  }
  return loadError("the program has no output '" + name + "'");
}

const Program::Step *Program::producerOf(llvm::StringRef output) const {
  size_t index = std::find(outputNames_.begin(), outputNames_.end(), output) - outputNames_.begin();
  for (const Step &step : steps_)
    for (int slot : step.outputs)
      for (size_t o : outputsOfSlot_[slot])
        if (o == index)
          return &step;
  return nullptr;
}

bool Program::reducedAsync(llvm::StringRef output) const {
  const Step *step = producerOf(output); // an async all-reduce; a reduce-scatter defers inside, if at all
  if (!step || !step->kernel->isAsync() || !step->node->is("AllReduce", "partita"))
    return false;
  DType t = step->node->output(0)->type().dtype; // the addends are float32 sums of either
  return t == DType::F32 || isHalfFloat(t);
}

bool Program::deferredInside(llvm::StringRef output) const {
  const Step *step = producerOf(output);
  return step && step->kernel->defersInside();
}

llvm::Error Program::setReductionAddend(llvm::StringRef output, const void *buffer) {
  size_t index = std::find(outputNames_.begin(), outputNames_.end(), output) - outputNames_.begin();
  if (index == outputNames_.size())
    return loadError("the program has no output '" + output + "'");
  DType t = slots_[outputSlots_[index]].view.dtype;
  if (buffer && t != DType::F32 && !isHalfFloat(t))
    return loadError("output '" + output + "': reduction addends are float32 sums of float32, bf16 or fp16 results");
  addendOfOutput_.resize(outputNames_.size(), nullptr);
  addendOfOutput_[index] = buffer;
  // Which result of which async step computes each output.
  stepAddends_.assign(steps_.size(), {});
  bool any = false;
  for (size_t si = 0; si < steps_.size(); ++si) {
    if (!steps_[si].kernel->isAsync())
      continue;
    std::vector<const void *> &a = stepAddends_[si];
    a.assign(steps_[si].outputs.size(), nullptr);
    for (size_t k = 0; k < a.size(); ++k)
      for (size_t o : outputsOfSlot_[steps_[si].outputs[k]])
        if (addendOfOutput_[o]) {
          a[k] = addendOfOutput_[o];
          any |= o == index;
        }
  }
  if (buffer && !any)
    return loadError("output '" + output + "' is not the result of an async reduction");
  return llvm::Error::success();
}

const TensorView *Program::staticTensor(llvm::StringRef valueName) const {
  auto it = staticByName_.find(valueName);
  return it == staticByName_.end() ? nullptr : &it->second;
}

TensorView Program::deviceView(int slot) const {
  TensorView v = slots_[slot].view;
  v.data = addressOf(slots_[slot]);
  return v;
}

TensorView Program::kernelView(int slot) const {
  TensorView v = deviceView(slot);
  v.data = device_.kernelAddress(v.data);
  return v;
}

void *Program::addressOf(const Slot &s) const {
  switch (s.home) {
  case Home::Input: return boundInputs_[s.index];
  case Home::Static: return statics_[s.index];
  case Home::Arena: return device_.offset(arena_.get(), s.index);
  case Home::Output: return outputBuffers_[s.index];
  }
  return nullptr;
}

llvm::Error Program::allocateRunBuffers() {
  // A step that wants its results back to back (a collective's bucket) gets
  // one block for the output buffers it computes, if none is made yet.
  for (const Step &step : steps_) {
    if (!step.kernel->wantsContiguousOutputs() || step.outputs.size() < 2)
      continue;
    std::vector<size_t> buffers;
    for (int id : step.outputs) {
      const Slot &slot = slots_[id];
      if (slot.home != Home::Output || slot.aliasOf >= 0 || outputBuffers_[slot.index] ||
          !ownsOutputBuffer_[slot.index] ||
          std::find(buffers.begin(), buffers.end(), slot.index) != buffers.end())
        break;
      buffers.push_back(slot.index);
    }
    if (buffers.size() != step.outputs.size())
      continue;
    size_t bytes = 0;
    for (size_t b : buffers)
      bytes += outputBufferBytes_[b];
    void *block = device_.allocate(bytes);
    if (!block)
      return loadError("out of device memory allocating a " + llvm::Twine(bytes) + "-byte block of outputs");
    outputBlocks_.push_back(block);
    outputBlockCharges_.emplace_back(device_.ledger(), outputCategory_, bytes);
    size_t at = 0;
    for (size_t b : buffers) {
      outputBuffers_[b] = device_.offset(block, at);
      ownsOutputBuffer_[b] = false; // the block's
      at += outputBufferBytes_[b];
    }
  }
  if (!scratch_)
    scratch_ = std::make_shared<ScratchMemory>(device_);
  if (auto err = scratch_->reserve(scratchLayout_))
    return err;
  if (stats_.arenaBytes > arenaBytes_) {
    auto arena = allocateArena(device_, stats_.arenaBytes);
    if (!arena)
      return arena.takeError();
    arena_ = std::move(*arena);
    arenaBytes_ = stats_.arenaBytes;
  }
  for (size_t i = 0; i < outputBuffers_.size(); ++i) {
    if (outputBuffers_[i] || !ownsOutputBuffer_[i])
      continue;
    outputBuffers_[i] = device_.allocate(outputBufferBytes_[i]);
    if (!outputBuffers_[i])
      return loadError("out of device memory allocating a " + llvm::Twine(outputBufferBytes_[i]) +
                       "-byte output buffer");
    outputCharges_[i].resize(outputBufferBytes_[i]);
  }
  return llvm::Error::success();
}

llvm::Expected<TensorView> Program::releaseWeight(llvm::StringRef name) {
  auto it = staticByName_.find(name);
  auto at = it == staticByName_.end() ? statics_.end() : std::find(statics_.begin(), statics_.end(), it->second.data);
  if (at == statics_.end())
    return loadError("the program has no weight '" + name + "' to hand over");
  size_t index = static_cast<size_t>(at - statics_.begin());
  releasedStatic_.resize(statics_.size());
  if (releasedStatic_[index])
    return loadError("weight '" + name + "' was handed over already");
  releasedStatic_[index] = true;
  size_t bytes = it->second.bytes();
  staticsCharge_.resize(staticsCharge_.bytes() - std::min(bytes, staticsCharge_.bytes()));
  return it->second;
}

void Program::setOutputCategory(MemoryCategory c) {
  for (MemoryCharge &charge : outputCharges_)
    charge.setCategory(c);
  for (MemoryCharge &charge : outputBlockCharges_)
    charge.setCategory(c);
  outputCategory_ = c;
}

size_t Program::deferredSumBytes() const {
  size_t bytes = 0;
  for (const Step &step : steps_)
    bytes += step.kernel->deferredSumBytes();
  return bytes;
}

size_t Program::kernelBytes(MemoryCategory c) const {
  size_t bytes = 0;
  for (const Step &step : steps_)
    if (step.kernel->persistentCategory() == c)
      bytes += step.kernel->persistentBytes();
  return bytes;
}

llvm::Expected<std::vector<TensorView>> Program::run(const llvm::StringMap<TensorView> &inputs) {
  if (auto err = allocateRunBuffers())
    return err;
  for (size_t i = 0; i < inputSpecs_.size(); ++i) {
    const auto &spec = inputSpecs_[i];
    auto it = inputs.find(spec.name);
    if (it == inputs.end())
      return loadError("missing input '" + spec.name + "' (" + spec.type.str() + ")");
    const TensorView &v = it->second;
    if (v.dtype != spec.type.dtype || v.shape != spec.type.shape)
      return loadError("input '" + spec.name + "' is " + dtypeName(v.dtype) + shapeString(v.shape) +
                       ", the program expects " + spec.type.str());
    boundInputs_[i] = v.data;
  }
  for (const auto &entry : inputs) {
    bool known = false;
    for (const auto &spec : inputSpecs_)
      known |= spec.name == entry.getKey();
    if (!known)
      return loadError("unexpected input '" + entry.getKey() + "' (the program takes no such input)");
  }
  std::vector<TensorView> ins, outs;
  std::vector<InFlight> inFlight;
  std::vector<int> inFlightOf(slots_.size(), -1); // slot -> index into inFlight, -1 when done
  // The async scratch slots of each category (Scratch.h): which in-flight step holds each (-1: free).
  std::array<std::array<int, ScratchLayout::kAsyncSlots>, kMemoryCategories> slotHolder;
  for (auto &holders : slotHolder)
    holders.fill(-1);
  auto finishSlot = [&](int id) -> llvm::Error {
    int k = inFlightOf[id];
    if (k < 0)
      return llvm::Error::success();
    for (int out : steps_[inFlight[k].step].outputs)
      inFlightOf[out] = -1;
    for (auto &holders : slotHolder)
      std::replace(holders.begin(), holders.end(), k, -1);
    return finish(inFlight[k]);
  };
  // The scratch of step `si`: the blocking part, or a free async slot (the
  // oldest holder finished first when none is free).
  auto scratchFor = [&](size_t si, void *&at) -> llvm::Error {
    ScratchNeed need = steps_[si].kernel->scratch();
    at = nullptr;
    if (!need.bytes)
      return llvm::Error::success();
    char *region = static_cast<char *>(scratch_->region(need.category));
    if (!steps_[si].kernel->isAsync()) {
      at = region + scratchLayout_.blockingOffset();
      return llvm::Error::success();
    }
    auto &holders = slotHolder[static_cast<size_t>(need.category)];
    auto free = std::find(holders.begin(), holders.end(), -1);
    if (free == holders.end()) {
      free = std::min_element(holders.begin(), holders.end());
      if (auto err = finishSlot(steps_[inFlight[*free].step].outputs[0]))
        return err;
    }
    *free = static_cast<int>(inFlight.size()); // the index its InFlight entry gets
    at = region + scratchLayout_.slotOffset(need.category, static_cast<int>(free - holders.begin()));
    return llvm::Error::success();
  };
  // A failed run still finishes what it started: MPI must not write into
  // buffers the next run (or a destroyed kernel) owns.
  auto abandon = [&](llvm::Error err) -> llvm::Error {
    llvm::consumeError(device_.finishWork()); // nothing launched outlives the run
    for (const InFlight &f : inFlight)
      llvm::consumeError(finishSlot(steps_[f.step].outputs[0]));
    return err;
  };
  for (size_t si = 0; si < steps_.size(); ++si) {
    Step &step = steps_[si];
    ins.clear();
    outs.clear();
    for (int id : step.inputs) { // a view of an in-flight result reads it too
      while (id >= 0 && slots_[id].aliasOf >= 0)
        id = slots_[id].aliasOf;
      if (id >= 0)
        if (auto err = finishSlot(id))
          return abandon(std::move(err));
    }
    for (int id : step.inputs)
      ins.push_back(id < 0 ? TensorView{} : kernelView(id));
    for (int id : step.outputs)
      outs.push_back(kernelView(id));
    KernelContext ctx{device_, ins, outs, env_, weightsVersion_};
    if (auto err = scratchFor(si, ctx.scratch))
      return abandon(std::move(err));
    ctx.scratch = device_.kernelAddress(ctx.scratch);
    std::vector<const void *> addends;
    if (step.kernel->isAsync()) {
      ctx.deferReductions = deferReductions_;
      if (si < stepAddends_.size()) {
        for (const void *a : stepAddends_[si])
          addends.push_back(device_.kernelAddress(a));
        ctx.addends = &addends;
      }
    }
    bool observed = onCollective_ && hasTrait(*step.node, OpTrait::Collective);
    auto start = profiling_ || observed ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point();
    if (step.kernel->communicates() || step.kernel->isAsync() || !device_.queuesWork()) {
      // On the host thread: at once on a device that queues nothing (no closure to
      // make per kernel), else following the compute stream's event (what it sends is written).
      if (device_.queuesWork()) {
        if (!ready_)
          ready_ = device_.createEvent();
        ready_->record(device_.defaultStream());
        ctx.ready = ready_.get();
      }
      if (auto err = step.kernel->run(ctx))
        return abandon(std::move(err));
    } else if (auto err = device_.launch([kernel = step.kernel.get(), &device = device_, ins, outs, env = env_,
                                          version = weightsVersion_, scratch = ctx.scratch]() mutable {
                 KernelContext c{device, ins, outs, env, version};
                 c.scratch = scratch;
                 return kernel->run(c);
               })) {
      return abandon(std::move(err));
    }
    if (observed && !step.kernel->isAsync())
      onCollective_(*step.node, start, start, std::chrono::steady_clock::now());
    if (step.kernel->isAsync()) {
      inFlight.push_back(InFlight{si, ins, outs, start, ctx.scratch});
      for (int id : step.outputs)
        inFlightOf[id] = static_cast<int>(inFlight.size() - 1);
      if (!overlapCollectives_)
        if (auto err = finishSlot(step.outputs[0]))
          return abandon(std::move(err));
    } else if (onOutput_) {
      if (auto err = device_.finishWork()) // handed on once computed
        return abandon(std::move(err));
      for (int id : step.outputs)
        for (size_t index : outputsOfSlot_[id])
          onOutput_(index, deviceView(id));
    }
    for (const InFlight &f : inFlight)
      if (inFlightOf[steps_[f.step].outputs[0]] >= 0)
        steps_[f.step].kernel->progress();
    if (afterKernel_)
      afterKernel_();
    if (profiling_) {
      if (auto err = device_.finishWork())
        return abandon(std::move(err));
      auto &entry = profile_[profileByNode_     ? step.node->describe()
                             : step.label.empty() ? step.node->qualifiedOp()
                                                  : step.label];
      entry.first += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
      ++entry.second;
    }
  }
  for (const InFlight &f : inFlight)
    if (auto err = finishSlot(steps_[f.step].outputs[0]))
      return abandon(std::move(err));
  if (device_.queuesWork()) { // done when the stream gets there (the contract above)
    if (!done_)
      done_ = device_.createEvent();
    done_->record(device_.defaultStream());
    if (auto err = device_.takeError()) // a failure known already
      return abandon(std::move(err));
  }
  std::vector<TensorView> results;
  for (int id : outputSlots_)
    results.push_back(deviceView(id));
  return results;
}

llvm::Error Program::finish(InFlight &f) {
  const Step &step = steps_[f.step];
  KernelContext ctx{device_, f.inputs, f.outputs, env_, weightsVersion_};
  ctx.deferReductions = deferReductions_;
  ctx.scratch = f.scratch;
  bool observed = onCollective_ && hasTrait(*step.node, OpTrait::Collective);
  auto start = profiling_ || observed ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point();
  if (auto err = step.kernel->finish(ctx))
    return err;
  if (observed)
    onCollective_(*step.node, f.started, start, std::chrono::steady_clock::now());
  if (profiling_) { // the time the program waited for it
    auto &entry = profile_[(profileByNode_ ? step.node->describe() : step.node->qualifiedOp()) + " (wait)"];
    entry.first += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    ++entry.second;
  }
  if (onOutput_)
    for (int id : step.outputs)
      for (size_t index : outputsOfSlot_[id])
        onOutput_(index, deviceView(id));
  return llvm::Error::success();
}

} // namespace partita::rt
