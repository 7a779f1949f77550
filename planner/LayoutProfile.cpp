//===- LayoutProfile.cpp --------------------------------------------------===//
#include "planner/LayoutProfile.h"
#include "compiler/plan/Names.h"
#include "driver/Compile.h"
#include "passes/AddOptimizer.h"
#include "planner/MemoryPrediction.h"
#include "planner/StepSimulation.h"
#include "runtime/core/DeviceRegistry.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include <atomic>
#include <cmath>

namespace partita::planner {

namespace {

int64_t sequenceLength(const Plan &plan) {
  for (const TensorSpec &in : plan.inputs) // token ids: [batch, sequence]
    if (!isFloat(in.type.dtype) && in.type.shape.size() >= 2)
      return in.type.shape[1];
  return plan.inputs.empty() || plan.inputs.front().type.shape.empty() ? 1 : plan.inputs.front().type.shape.back();
}

} // namespace

ScratchFolder::~ScratchFolder() {
  if (!path.empty())
    llvm::sys::fs::remove_directories(path);
}

Mesh layoutMesh(const Layout &l) { // as compile lays ranks out: pp outermost, tp innermost
  Mesh mesh;
  if (l.pp > 1)
    mesh.axes.push_back(MeshAxis{mesh_axis::kPipeline, l.pp});
  if (l.dp > 1)
    mesh.axes.push_back(MeshAxis{mesh_axis::kData, l.dp});
  mesh.axes.push_back(MeshAxis{mesh_axis::kTensor, l.tp});
  return mesh;
}

namespace {

const char *largestCategory(const rt::MemoryLedger::Bytes &bytes) {
  size_t best = 0;
  for (size_t c = 1; c < bytes.size(); ++c)
    if (bytes[c] > bytes[best])
      best = c;
  return rt::memoryCategoryName(static_cast<rt::MemoryCategory>(best));
}
} // namespace

std::vector<std::string> layoutInputShapes(const Layout &layout, const ProfileContext &ctx) {
  if (layout.microBatchSize == ctx.modelBatch)
    return ctx.inputShapes;
  std::vector<std::string> shapes;
  for (const std::string &spec : ctx.inputShapes) // the user's, but for the batch inputs set below
    if (llvm::none_of(ctx.batchInputs, [&](const auto &in) { return llvm::StringRef(spec).startswith(in.first + "="); }))
      shapes.push_back(spec);
  for (const auto &[name, shape] : ctx.batchInputs) {
    std::string spec = name + "=" + std::to_string(layout.microBatchSize);
    for (size_t i = 1; i < shape.size(); ++i)
      spec += "x" + std::to_string(shape[i]);
    shapes.push_back(spec);
  }
  return shapes;
}

llvm::Expected<LayoutProfile> profileLayout(const Layout &layout, const ProfileContext &ctx) {
  CompileOptions o;
  o.model = ctx.model;
  o.inputShapes = layoutInputShapes(layout, ctx);
  o.train = true;
  o.tp = layout.tp;
  o.pp = layout.pp;
  o.dp = layout.dp;
  o.virtualStages = layout.virtualStages;
  o.ppLayers = layout.stageLayers;
  o.zero = layout.zero;
  o.sequenceParallel = layout.sequenceParallel;
  o.recompute = layout.recompute;
  o.precision = layout.precision;
  auto compiled = compileModel(o);
  if (!compiled)
    return compiled.takeError();
  auto local = localizePrograms(*compiled);
  if (!local)
    return local.takeError();
  std::map<std::string, const Graph *> programs;
  for (const LocalProgram &lp : local->programs)
    programs[lp.rel] = lp.graph.get();
  const Plan &plan = compiled->plan;
  auto device = rt::DeviceRegistry::get().find(ctx.sizingDevice);
  if (!device)
    return device.takeError();
  MemoryPredictionOptions mo;
  mo.programs = &programs;
  mo.device = (*device)->kind;
  mo.microBatches = static_cast<int>(layout.microBatches);
  mo.schedule = layout.virtualStages > 1 ? "interleaved" : layout.schedule;
  MemoryPredictor predictor(plan, mo);
  auto memory = predictor.predict();
  if (!memory)
    return memory.takeError();

  LayoutProfile profile;
  profile.layout = layout;
  profile.sequenceLength = sequenceLength(plan);
  const int64_t p = plan.stages();
  profile.stages.resize(static_cast<size_t>(p));
  AxisLinks links(plan.mesh, *ctx.machine);
  for (const RankMemory &m : *memory) {
    auto it = m.rank->coords.find(mesh_axis::kPipeline);
    StageProfile &stage = profile.stages[it == m.rank->coords.end() ? 0 : static_cast<size_t>(it->second)];
    if (m.peak < stage.peak)
      continue;
    stage.memory = m.bytes;
    stage.peak = m.peak;
    stage.rank = m.rank->rank;
    stage.gradientBytes = m.sizes.grads;
    stage.gradientElements = m.sizes.gradSums / 4; // summed in float32
    stage.parameterBytes = m.sizes.params;
    stage.stateBytes = m.sizes.moments + m.sizes.masters;
  }
  // Times: each pipeline rank's first rank (its tp and dp peers run the same work).
  std::vector<bool> timed(static_cast<size_t>(p), false);
  for (const RankPlan &r : plan.ranks) {
    auto it = r.coords.find(mesh_axis::kPipeline);
    const int64_t s = it == r.coords.end() ? 0 : it->second;
    if (timed[static_cast<size_t>(s)])
      continue;
    timed[static_cast<size_t>(s)] = true;
    StageProfile &stage = profile.stages[static_cast<size_t>(s)];
    auto timeOf = [&](llvm::StringRef base, int64_t chunk) -> ProgramTime {
      const Graph *g = predictor.program(r.program(chunkProgram(base.str(), s + chunk * p, plan)));
      return g ? programTime(*g, *ctx.machine, links) : ProgramTime();
    };
    for (int64_t k = 0; k < plan.virtualStages; ++k) {
      stage.forward.push_back(timeOf(kForwardProgram, k));
      stage.backward.push_back(timeOf(optimizer_io::kBackward, k));
      const bool gradNorm = ctx.clipping || layout.precision == "fp16"; // the trainer runs it only then
      for (const char *base : {optimizer_io::kGradNorm, optimizer_io::kStep}) {
        if (base == optimizer_io::kGradNorm && !gradNorm)
          continue;
        ProgramTime t = timeOf(base, k);
        stage.tail.compute += t.compute;
        stage.tail.productFlops += t.productFlops;
        for (const auto &[op, sec] : t.byOp)
          stage.tail.byOp[op] += sec;
        for (const auto &[axis, sec] : t.collectives)
          stage.tail.collectives[axis] += sec;
        for (const auto &[axis, sec] : t.reductions)
          stage.tail.reductions[axis] += sec;
      }
      profile.forwardFlops += stage.forward.back().productFlops * layout.tp;
      profile.productFlops += (stage.forward.back().productFlops + stage.backward.back().productFlops) * layout.tp;
    }
  }
  return profile;
}

Prediction predict(const Layout &layout, const LayoutProfile &profile, const ProfileContext &ctx, double memoryCap,
                   int64_t globalBatch) {
  const Machine &machine = *ctx.machine;
  Prediction out;
  out.layout = layout;
  // Exact when the profile is this layout's own: a class's (dp 1, ZeRO 0,
  // 1F1B) differs in its data-parallel traffic and partitions, and in the
  // micro-batches in flight (memory).
  const bool exact = profile.layout.str() == layout.str();
  out.memoryExact = exact;
  AxisLinks links(layoutMesh(layout), machine);
  const Link &dpLink = links.link(mesh_axis::kData);
  // A pipeline send between pipeline ranks `from` and `to` crosses nodes
  // when any pair of their ranks (the same dp and tp coordinates; pp is
  // the outermost axis, so a stage's ranks are consecutive) lies on two
  // nodes: where a node holds several stages, only some boundaries do.
  auto sendLink = [&](int64_t from, int64_t to) -> const Link & {
    const int64_t each = static_cast<int64_t>(layout.dp) * layout.tp;
    const int64_t node = std::max(1, machine.devicesPerNode);
    for (int64_t j = 0; j < each; ++j)
      if ((from * each + j) / node != (to * each + j) / node)
        return machine.interNode;
    return machine.intraNode;
  };
  const int64_t pp = layout.pp;
  const double d = layout.dp;
  const int64_t m = layout.microBatches;
  // Which gradient reductions wait for the last micro-batch: the runtime
  // defers ZeRO-0's all-reduce and ZeRO-1's reduce-scatter, float32 or half
  // (DDP's no_sync, CollectiveKernels.cpp); ZeRO-2/3's parts are reduced
  // every micro-batch.
  const bool deferred = layout.zero <= 1;
  std::vector<StageTimes> stages;
  double worstBusy = -1;
  for (const StageProfile &sp : profile.stages) {
    StageTimes st;
    const double chunks = static_cast<double>(sp.forward.size());
    // ZeRO's data-parallel traffic by formula (a class profile has none):
    // reductions of the gradients, ZeRO-1/2's gather of the updated
    // parameters after the step, ZeRO-3's gathers of each chunk's parameters
    // before its forward and its backward, every micro-batch.
    double reduce = 0, gatherAfterStep = 0, gatherPerPass = 0;
    // Over several micro-batches the runtime sums each gradient in float32
    // (GradientAccumulator.h): a pass over them per micro-batch.
    const double accumulate = m > 1 ? sp.gradientElements * (sp.gradientBytes / std::max(1.0, sp.gradientElements) + 8) /
                                          machine.bandwidth() / chunks
                                    : 0;
    if (!exact && d > 1) {
      const double g = sp.gradientBytes, w = sp.parameterBytes;
      reduce = layout.zero == 0 ? dpLink.time(2 * (d - 1) / d * g, 2 * (d - 1)) : dpLink.time((d - 1) / d * g, d - 1);
      if (layout.zero == 1 || layout.zero == 2)
        gatherAfterStep = dpLink.time((d - 1) / d * w, d - 1);
      if (layout.zero == 3)
        gatherPerPass = dpLink.time((d - 1) / d * w / chunks, d - 1);
    }
    double busy = 0, compute = 0, tensor = 0, data = 0;
    for (size_t k = 0; k < sp.forward.size(); ++k) {
      const ProgramTime &f = sp.forward[k], &b = sp.backward[k];
      ChunkTimes c;
      const double fData = f.collectiveTime(mesh_axis::kData) + gatherPerPass;
      const double bGather = b.collectiveTime(mesh_axis::kData) - b.reductionTime(mesh_axis::kData) + gatherPerPass;
      c.forward = f.compute + f.collectiveTime(mesh_axis::kTensor) + fData;
      // The gradient reduction overlaps its backward (buckets of 25 MB go as
      // they fill): what shows is what the compute does not cover, at least
      // the last bucket's, and of the rest what the machine cannot hide
      // (collectiveOverlap). It comes once a step where the runtime defers
      // it to the last micro-batch, and every micro-batch where it does not.
      const double reduction = b.reductionTime(mesh_axis::kData) + reduce / chunks;
      const double buckets = std::max(1.0, std::ceil(sp.gradientBytes / chunks / 25e6));
      const double hidden = machine.collectiveOverlap * std::min(reduction - reduction / buckets, b.compute);
      const double exposed = reduction > 0 ? reduction - hidden : 0;
      const bool everyMicroBatch = m > 1 && !deferred;
      // After the backward's input gradient left: its kernels after the
      // send (the weights' gradients), the sums and the reduction's tail.
      const double reduceEach = everyMicroBatch ? exposed : 0;
      c.afterSend = b.computeAfterSend + accumulate + reduceEach;
      c.lastBackwardExtra = everyMicroBatch ? 0 : exposed;
      c.backward = b.compute + b.collectiveTime(mesh_axis::kTensor) + bGather + accumulate + reduceEach;
      // Forward to the next pipeline rank (interleaved: the last rank's
      // chunk to the first rank's next chunk), backward to the previous.
      const int64_t rank = static_cast<int64_t>(stages.size());
      c.sendForward = f.sendBytes > 0 ? sendLink(rank, (rank + 1) % pp).time(f.sendBytes, 1) : 0;
      c.sendBackward = b.sendBytes > 0 ? sendLink(rank, (rank + pp - 1) % pp).time(b.sendBytes, 1) : 0;
      st.chunks.push_back(c);
      compute += (f.compute + b.compute + accumulate) * static_cast<double>(m);
      tensor += (f.collectiveTime(mesh_axis::kTensor) + b.collectiveTime(mesh_axis::kTensor)) * static_cast<double>(m);
      data += (fData + bGather) * static_cast<double>(m) + exposed * (everyMicroBatch ? static_cast<double>(m) : 1.0);
    }
    st.tail = sp.tail.total() + gatherAfterStep; // with its own collectives
    stages.push_back(st);
    busy = compute + tensor + data + st.tail;
    if (busy > worstBusy) {
      worstBusy = busy;
      out.busiestStage = static_cast<int64_t>(stages.size()) - 1;
      out.time.compute = compute;
      out.time.tensorComm = tensor;
      out.time.dataComm = data;
      out.time.tail = st.tail;
      out.forwardByOp.clear(), out.backwardByOp.clear();
      for (size_t k = 0; k < sp.forward.size(); ++k) {
        for (const auto &[op, sec] : sp.forward[k].byOp)
          out.forwardByOp[op] += sec;
        for (const auto &[op, sec] : sp.backward[k].byOp)
          out.backwardByOp[op] += sec;
      }
      out.tailByOp = sp.tail.byOp;
    }
  }
  rt::PipelineKind kind = rt::PipelineKind::OneFOneB;
  rt::parsePipelineKind(layout.schedule, kind);
  SimulatedStep sim = simulateStep(stages, kind, m);
  out.stepSeconds = sim.seconds;
  out.time.bubble = std::max(0.0, sim.seconds - worstBusy);
  const double devices = static_cast<double>(layout.tp) * layout.pp * layout.dp;
  out.tokensPerSecond = static_cast<double>(globalBatch * profile.sequenceLength) / sim.seconds;
  const char *key = layout.precision == "fp32" ? "fp32" : layout.precision == "fp16" ? "fp16" : "bf16";
  auto peak = machine.matmulFlops.find(key);
  const double peakRate = peak != machine.matmulFlops.end() ? peak->second : machine.matmulFlops.at("fp32");
  out.mfu = 3 * profile.forwardFlops * static_cast<double>(m) * d / (sim.seconds * devices * peakRate);
  out.deviceTflops = profile.productFlops * static_cast<double>(m) * d / (sim.seconds * devices) / 1e12;

  // Memory: the fullest rank's; from a class profile, ZeRO's partitions over
  // dp by formula (moments and masters from stage 1, gradients from 2,
  // parameters at 3).
  for (const StageProfile &sp : profile.stages) {
    rt::MemoryLedger::Bytes bytes = sp.memory;
    if (!exact && d > 1) {
      auto part = [&](rt::MemoryCategory c) {
        size_t &b = bytes[static_cast<size_t>(c)];
        b = static_cast<size_t>(std::ceil(static_cast<double>(b) / d));
      };
      if (layout.zero >= 1)
        part(rt::MemoryCategory::OptimizerStates);
      // The backward's gradients are the rank's parts from ZeRO-1 on, but
      // for ZeRO-1's float32 sums over several micro-batches, kept whole in
      // the reduction's staging until the last (for half gradients, an
      // over-estimate by their half copy's parts).
      if (layout.zero >= 2 || (layout.zero == 1 && m == 1))
        part(rt::MemoryCategory::Gradients);
      if (layout.zero >= 3)
        part(rt::MemoryCategory::Parameters);
    }
    size_t peakBytes = 0;
    for (size_t b : bytes)
      peakBytes += b;
    if (peakBytes >= out.peak) {
      out.peak = peakBytes;
      out.memory = bytes;
      out.peakRank = sp.rank;
    }
  }
  out.fits = static_cast<double>(out.peak) <= memoryCap;
  if (!out.fits)
    out.doesNotFit = largestCategory(out.memory);
  return out;
}

} // namespace partita::planner
