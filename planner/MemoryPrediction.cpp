//===- MemoryPrediction.cpp -----------------------------------------------===//
#include "planner/MemoryPrediction.h"
#include "compiler/onnx/OnnxImport.h"
#include "passes/AddOptimizer.h"
#include "runtime/executor/Program.h"
#include "runtime/schedule/PipelineSchedule.h"
#include "runtime/session/Session.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/FormatVariadic.h"
#include <cmath>

namespace partita {

namespace {
/// Loads a program to read its sizes without allocating anything: the
/// prediction comes from types, so a plan whose tensors would not fit this
/// machine still gets one. The addresses it hands out are never read or
/// written (nothing runs, and copies are dropped). It stands for a device of
/// kind `kind` (the kernels loaded are that device's), which need not be
/// present on this machine.
class SizingDevice final : public rt::Device {
public:
  explicit SizingDevice(rt::DeviceType kind) : kind_(kind) {}
  rt::DeviceType kind() const override { return kind_; }
  std::string name() const override { return "sizing"; }
  void *allocate(size_t) override { return reinterpret_cast<void *>(alignment()); }
  void deallocate(void *) override {}
  void copyFromHost(void *, const void *, size_t) override {}
  void copyToHost(void *, const void *, size_t) override {}
  void copyOnDevice(void *, const void *, size_t) override {}

private:
  rt::DeviceType kind_;
};

double bytesOf(const TensorType &t) { return static_cast<double>(t.numel()) * static_cast<double>(dtypeSize(t.dtype)); }

/// What rank `r` sends its pipeline peers in a step besides its programs'
/// partita.Send (counted per program run): a shared weight's gradient, once;
/// `largest` gets the largest of them (one is received at a time).
double sharedGradientBytes(const Plan &plan, const RankPlan &r, std::set<int64_t> &to, double &largest) {
  double bytes = 0;
  largest = 0;
  if (plan.stages() < 2)
    return bytes;
  for (const Plan::Edge &e : plan.pipelineWeights)
    for (int64_t stage : {e.from, e.to})
      if (stage % plan.stages() == r.coords.at(mesh_axis::kPipeline)) {
        std::string mine = stage == e.from ? e.value : sharedWeightCopy(e.value, e.to);
        // The gradient as the backward makes it (mixed precision's: half).
        const TensorType *grad = nullptr;
        for (const auto &[name, rel] : r.programs)
          if (auto io = plan.programIO.find(rel); io != plan.programIO.end())
            for (const TensorSpec &out : io->second.outputs)
              if (out.name == optimizer_io::gradOutput(mine))
                grad = &out.type;
        for (size_t i = 0; i < plan.params.size() && i < plan.paramTypes.size(); ++i)
          if (plan.params[i] == mine) {
            const double b = bytesOf(grad ? *grad : plan.paramTypes[i]);
            bytes += b;
            largest = std::max(largest, b);
          }
        to.insert(stage == e.from ? e.to : e.from);
      }
  return bytes;
}
} // namespace

double collectiveBytes(const Node &n) {
  double parts = static_cast<double>(n.intAttr("parts", 1));
  double in = 0; // a bucketed all-reduce reduces all its operands
  for (const Value *v : n.inputs())
    in += bytesOf(v->type());
  double out = 0; // a bucketed all-gather gathers all its operands
  for (const Value *v : n.outputs())
    out += bytesOf(v->type());
  if (n.op() == "AllReduce")
    return 2 * (parts - 1) / parts * in;
  if (n.op() == "AllGather")
    return (parts - 1) / parts * out;
  return (parts - 1) / parts * in; // ReduceScatter
}

const Graph *MemoryPredictor::program(const std::string &rel) const {
  auto it = graphs_.find(rel);
  return it == graphs_.end() ? nullptr : it->second.get();
}

/// Under a pipeline, what the micro-batches in flight add to a rank's
/// activations: each keeps the forward's outputs but the loss in buffers of
/// its own (StageRun.h; 64-byte aligned), in place of the program's, as many
/// as the schedule has in flight (PipelineSchedule.h) per model chunk.
double MemoryPredictor::inFlightBytes(const RankPlan &r) const {
  if (plan_.stages() < 2)
    return 0;
  const int64_t p = plan_.stages(), chunks = plan_.virtualStages, s = r.coords.at(mesh_axis::kPipeline);
  const int64_t m = std::max(1, o_.microBatches);
  rt::PipelineKind kind = rt::PipelineKind::OneFOneB;
  rt::parsePipelineKind(o_.schedule, kind);
  std::vector<rt::Action> actions = chunks > 1 ? rt::InterleavedSchedule(p, s, chunks, m).step()
                                               : rt::PipelineSchedule(kind, p, s, m).step();
  double extra = 0;
  for (int64_t k = 0; k < chunks; ++k) {
    int64_t live = 0, most = 0;
    for (const rt::Action &a : actions)
      if (a.chunk == k && (a.kind == rt::Action::Kind::Forward || a.kind == rt::Action::Kind::Backward))
        most = std::max(most, live += a.kind == rt::Action::Kind::Forward ? 1 : -1);
    const int64_t stage = s + k * p;
    auto io = plan_.programIO.find(r.program(chunkProgram(kForwardProgram, stage, plan_)));
    if (io == plan_.programIO.end())
      continue;
    double exact = 0, rounded = 0;
    for (size_t i = stage + 1 == plan_.globalStages() ? 1 : 0; i < io->second.outputs.size(); ++i) {
      double bytes = bytesOf(io->second.outputs[i].type);
      exact += bytes;
      rounded += std::ceil(std::max(bytes, 1.0) / 64) * 64;
    }
    extra += static_cast<double>(most) * rounded - exact;
  }
  return extra;
}

llvm::Expected<const ProgramSizes *> MemoryPredictor::sizeOf(const std::string &rel) {
  if (auto it = sized_.find(rel); it != sized_.end())
    return &it->second;
  std::unique_ptr<Graph> graph;
  if (o_.programs) {
    auto it = o_.programs->find(rel);
    if (it == o_.programs->end())
      return llvm::createStringError(llvm::inconvertibleErrorCode(), "no program " + rel + " was compiled");
    graph = cloneGraph(*it->second);
  } else { // weights by reference: typed, never read
    llvm::SmallString<256> file(o_.dir);
    llvm::sys::path::append(file, rel);
    auto imported = importOnnx(file, compiledProgramImport(plan_.weightFilePaths()));
    if (!imported)
      return imported.takeError();
    graph = std::move(*imported);
  }
  SizingDevice sizing(o_.device);
  rt::markUpdatedWeights(*graph, plan_);
  auto program = rt::Program::load(*graph, sizing, nullptr, /*readWeights=*/false);
  if (!program)
    return program.takeError();
  ProgramSizes z;
  for (const Node *n : graph->nodes())
    if (n->domain() == "partita" && n->hasAttr("parts") && !n->is("ShardSlice", "partita")) { // a slice moves nothing
      ++z.collectives;
      z.comm += collectiveBytes(*n);
      std::string what = n->numInputs() > 1 ? "bucket of " + std::to_string(n->numInputs()) : n->input(0)->type().str();
      z.lines.push_back(llvm::formatv("  {0,-14} {1,-22} {2,10:f3} MB  {3} (over {4})", n->op(), what,
                                      collectiveBytes(*n) / 1e6, n->output()->name(), n->stringAttr("axis", "")));
    }
  for (const Node *n : graph->nodes())
    if (n->is("Send", "partita")) {
      z.sends += bytesOf(n->input(0)->type());
      z.sendTo.insert(n->intAttr("peer", 0));
    }
  z.weights = static_cast<double>((*program)->stats().weightBytes);
  z.arena = static_cast<double>((*program)->stats().arenaBytes);
  z.outputs = static_cast<double>((*program)->stats().outputBytes);
  for (size_t c = 0; c < rt::kMemoryCategories; ++c) {
    z.kernels[c] = static_cast<double>((*program)->kernelBytes(static_cast<rt::MemoryCategory>(c)));
    z.scratch[c] = static_cast<double>((*program)->scratchBytes(static_cast<rt::MemoryCategory>(c)));
  }
  for (const Value *out : graph->outputs())
    if ((*program)->deferredInside(out->name()))
      z.summedInside += static_cast<double>(out->type().numel() * 4); // the sums the runtime does not keep
  z.deferredSums = static_cast<double>((*program)->deferredSumBytes());
  for (const std::string &name : plan_.params) {
    if (const rt::TensorView *p = (*program)->staticTensor(name))
      z.params += static_cast<double>(p->bytes());
    // Mixed precision's float32 master copies (half-parameters): optimizer states.
    if (const rt::TensorView *m = (*program)->staticTensor(optimizer_io::master(name)))
      z.masters += static_cast<double>(m->bytes());
  }
  // The optimizer's state as the step reads it: whole, or under ZeRO the
  // rank's part (moments from stage 1, gradients from stage 2).
  for (const Value *in : graph->inputs()) {
    llvm::StringRef n(in->name());
    if (n.startswith(optimizer_io::gradient(""))) {
      z.grads += bytesOf(in->type());
      // Over micro-batches the runtime sums gradients in float32, half ones too (GradientAccumulator.h).
      z.gradSums += static_cast<double>(in->type().numel() * 4);
    } else if (n.startswith(optimizer_io::moment1("")) || n.startswith(optimizer_io::moment2(""))) {
      z.moments += bytesOf(in->type());
    }
  }
  graphs_[rel] = std::move(graph);
  return &sized_.emplace(rel, std::move(z)).first->second;
}

llvm::Expected<std::vector<RankMemory>> MemoryPredictor::predict() {
  // Ranks that run the same programs (dp replicas) are sized once, with the
  // others named after them.
  std::map<std::map<std::string, std::string>, size_t> groupOf; // programs -> index in out
  std::vector<RankMemory> out;
  for (const RankPlan &r : plan_.ranks) {
    if (o_.onlyRank >= 0 && r.rank != o_.onlyRank)
      continue;
    if (auto [it, added] = groupOf.try_emplace(r.programs, out.size()); !added) {
      out[it->second].others.push_back(r.rank);
      continue;
    }
    out.emplace_back().rank = &r;
  }
  for (RankMemory &m : out) {
    const RankPlan &r = *m.rank;
    // The rank's programs together, in schedule order: they share one arena
    // (the largest; the training loop's Program::shareArena), each output
    // has a buffer of its own (the forward's saved activations among them).
    ProgramSizes &z = m.sizes;
    double summedInside = 0;
    auto add = [&](rt::MemoryCategory c, double bytes) { m.bytes[static_cast<size_t>(c)] += static_cast<size_t>(bytes); };
    // With virtual stages the rank's programs repeat per model chunk (forward.1, ...).
    std::vector<std::string> names;
    for (int64_t k = 0; k < plan_.virtualStages; ++k)
      for (const std::string &base : plan_.scheduleOrder)
        names.push_back(chunkProgram(base, k * plan_.stages(), plan_));
    for (const std::string &name : names) {
      const std::string base = llvm::StringRef(name).split('.').first.str(); // forward.1 is a forward
      auto one = sizeOf(r.program(name));
      if (!one)
        return one.takeError();
      // Under optimizer offload the step runs on the host: none of its memory is the device's.
      bool onDevice = !(o_.offloadOptimizer && base == optimizer_io::kStep);
      if (onDevice) {
        add(rt::MemoryCategory::Parameters, (*one)->weights - (*one)->masters);
        add(rt::MemoryCategory::OptimizerStates, (*one)->masters);
        if (base != optimizer_io::kStep)
          add(base == optimizer_io::kBackward ? rt::MemoryCategory::Gradients : rt::MemoryCategory::Activations,
              (*one)->outputs);
        for (size_t c = 0; c < rt::kMemoryCategories; ++c) {
          add(static_cast<rt::MemoryCategory>(c), (*one)->kernels[c]);
          z.scratch[c] = std::max(z.scratch[c], (*one)->scratch[c]); // the largest program's, as z.arena
        }
        z.arena = std::max(z.arena, (*one)->arena);
      }
      summedInside += (*one)->summedInside;
      z.deferredSums += (*one)->deferredSums;
      z.weights += (*one)->weights;
      if (base != optimizer_io::kStep) // the step's outputs are bound to the parameters and moments (counted below)
        z.outputs += (*one)->outputs;
      z.params += (*one)->params;
      z.masters += (*one)->masters;
      if (base == optimizer_io::kStep) {
        z.grads += (*one)->grads;
        z.gradSums += (*one)->gradSums;
        z.moments += (*one)->moments;
      }
      z.comm += (*one)->comm;
      z.collectives += (*one)->collectives;
      z.sends += (*one)->sends * std::max(1, o_.microBatches); // forward and backward: once per micro-batch
      z.sendTo.insert((*one)->sendTo.begin(), (*one)->sendTo.end());
      for (const std::string &l : (*one)->lines)
        z.lines.push_back(l + (name == kForwardProgram ? "" : " [" + name + "]"));
    }
    add(rt::MemoryCategory::Activations, z.arena);
    for (size_t c = 0; c < rt::kMemoryCategories; ++c)
      add(static_cast<rt::MemoryCategory>(c), z.scratch[c]);
    add(rt::MemoryCategory::Activations, inFlightBytes(r));
    if (!o_.offloadOptimizer)
      add(rt::MemoryCategory::OptimizerStates, z.moments);
    if (o_.microBatches > 1) // the gradient sums over micro-batches the runtime keeps, and ZeRO-1's reduce-scatters
      add(rt::MemoryCategory::Gradients, z.gradSums - summedInside + z.deferredSums);
    // A shared weight's gradient from the other stage is received into
    // device memory and added to this stage's (StageLinks), one at a time:
    // every step, on top of what the rank keeps.
    double largestShared = 0;
    m.sharedGradients = sharedGradientBytes(plan_, r, z.sendTo, largestShared);
    add(rt::MemoryCategory::Communication, largestShared);
    for (size_t bytes : m.bytes)
      m.peak += bytes;
    // A step's sends, its programs' and a shared weight's gradient: each
    // copy lives until its receiver has taken it, at the latest the end of
    // the step (PendingSends::drain).
    m.sendCopies = static_cast<size_t>(z.sends + m.sharedGradients);
  }
  return out;
}

} // namespace partita
