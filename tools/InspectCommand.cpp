//===- InspectCommand.cpp - partita inspect -------------------------------===//
//
// What a compiled plan does: the mesh and groups, the coverage report, the
// sharded IR (or one rank's program), a per-rank memory table and the bytes
// every collective moves per step (ring algorithms, as nccl-tests count them:
// all-reduce 2(n-1)/n of the buffer, all-gather and reduce-scatter (n-1)/n of
// the full buffer).
//===----------------------------------------------------------------------===//
#include "runtime/core/DeviceRegistry.h"
#include "compiler/onnx/OnnxImport.h"
#include "passes/AddOptimizer.h"
#include "runtime/core/Device.h"
#include "runtime/executor/Program.h"
#include "tools/Commands.h"
#include "compiler/plan/Plan.h"
#include "tools/ToolCommon.h"
#include "tools/ZeroMemory.h"
#include "runtime/schedule/PipelineSchedule.h"
#include "runtime/session/Session.h"
#include "runtime/train/MemoryReport.h"
#include "llvm/Support/CommandLine.h"
#include <map>
#include <set>
#include "llvm/Support/Format.h"
#include "tools/InspectCheckpoint.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"
#include <cstdio>
#include <tuple>

namespace cl = llvm::cl;

namespace partita {

static cl::SubCommand inspectCmd("inspect", "Show a compiled plan: mesh, coverage, memory, communication (and IR); "
                                            "or a checkpoint (launch --save): progress, layout, tensors");
static cl::opt<std::string> dir(cl::Positional, cl::desc("<out/ | checkpoint/>"), cl::sub(inspectCmd), cl::Required);
static cl::opt<int> microBatches("micro-batches",
                                 cl::desc("The launch's --micro-batches, for the memory prediction (summed gradients)"),
                                 cl::init(1), cl::sub(inspectCmd));
static cl::opt<std::string> inspectSchedule("schedule",
                                            cl::desc("A pipeline plan's schedule the prediction assumes: 1f1b "
                                                     "(default), gpipe or interleaved"),
                                            cl::init("1f1b"), cl::sub(inspectCmd));
static cl::opt<int> onlyRank("rank",
                             cl::desc("Print this rank's program (as --ir prints the sharded IR) and list its "
                                      "collectives"),
                             cl::init(-1), cl::sub(inspectCmd));
static cl::opt<bool> printIr("ir", cl::desc("Also print the sharded IR (with --rank k: rank k's program)"),
                             cl::sub(inspectCmd));
static cl::opt<std::string> inspectDevice("device",
                                          cl::desc("The device the prediction is for: its kernels' workspace "
                                                   "(default cpu)"),
                                          cl::value_desc("NAME"), cl::init(rt::kDefaultDevice), cl::sub(inspectCmd));
static cl::opt<bool> allInitializers("all-initializers",
                                     cl::desc("List every trainable initializer (by default: the frozen ones, and "
                                              "the trainable ones when there are at most 32)"),
                                     cl::sub(inspectCmd));

/// Under a pipeline, what the micro-batches in flight add to a rank's
/// activations: each keeps the forward's outputs but the loss in buffers of its
/// own (StageRun.h; 64-byte aligned), in place of the program's, as many as
/// the schedule has in flight (PipelineSchedule.h) per model chunk.
/// What rank `r` sends its pipeline peers in a step besides its programs'
/// partita.Send (counted per program run): a shared weight's gradient, once.
static double sharedGradientBytes(const Plan &plan, const RankPlan &r, std::set<int64_t> &to) {
  double bytes = 0;
  if (plan.stages() < 2)
    return bytes;
  for (const Plan::Edge &e : plan.pipelineWeights)
    for (int64_t stage : {e.from, e.to})
      if (stage % plan.stages() == r.coords.at(mesh_axis::kPipeline)) {
        std::string mine = stage == e.from ? e.value : sharedWeightCopy(e.value, e.to);
        for (size_t i = 0; i < plan.params.size() && i < plan.paramTypes.size(); ++i)
          if (plan.params[i] == mine)
            bytes += static_cast<double>(plan.paramTypes[i].numel()) * static_cast<double>(dtypeSize(plan.paramTypes[i].dtype));
        to.insert(stage == e.from ? e.to : e.from);
      }
  return bytes;
}

static double inFlightBytes(const Plan &plan, const RankPlan &r) {
  if (plan.stages() < 2)
    return 0;
  const int64_t p = plan.stages(), chunks = plan.virtualStages, s = r.coords.at(mesh_axis::kPipeline);
  const int64_t m = std::max(1, microBatches.getValue());
  rt::PipelineKind kind = rt::PipelineKind::OneFOneB;
  rt::parsePipelineKind(inspectSchedule, kind);
  std::vector<rt::Action> actions = chunks > 1 ? rt::InterleavedSchedule(p, s, chunks, m).step()
                                               : rt::PipelineSchedule(kind, p, s, m).step();
  double extra = 0;
  for (int64_t k = 0; k < chunks; ++k) {
    int64_t live = 0, most = 0;
    for (const rt::Action &a : actions)
      if (a.chunk == k && (a.kind == rt::Action::Kind::Forward || a.kind == rt::Action::Kind::Backward))
        most = std::max(most, live += a.kind == rt::Action::Kind::Forward ? 1 : -1);
    const int64_t stage = s + k * p;
    auto io = plan.programIO.find(r.program(chunkProgram(kForwardProgram, stage, plan)));
    if (io == plan.programIO.end())
      continue;
    double exact = 0, rounded = 0;
    for (size_t i = stage + 1 == plan.globalStages() ? 1 : 0; i < io->second.outputs.size(); ++i) {
      const TensorType &t = io->second.outputs[i].type;
      double bytes = static_cast<double>(t.numel()) * static_cast<double>(dtypeSize(t.dtype));
      exact += bytes;
      rounded += std::ceil(std::max(bytes, 1.0) / 64) * 64;
    }
    extra += static_cast<double>(most) * rounded - exact;
  }
  return extra;
}

bool inspectSelected() { return static_cast<bool>(inspectCmd); }

static std::string path(llvm::StringRef rel) { return inDir(dir, rel); }

/// Loads a program to read its sizes without allocating anything: inspect
/// reports from types, so a plan whose tensors would not fit this machine
/// still prints its table. The addresses it hands out are never read or
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

/// "  the same for ranks 8, 16, ..., 56 (rank 0's programs)": a run of
/// three or more ranks an equal step apart is written by its ends.
static std::string sameForRanks(const std::vector<int64_t> &ranks, int64_t first) {
  std::string list;
  for (size_t i = 0; i < ranks.size();) {
    size_t last = i; // ranks[i..last]: one step apart
    while (last + 1 < ranks.size() && (last == i || ranks[last + 1] - ranks[last] == ranks[i + 1] - ranks[i]))
      ++last;
    list += list.empty() ? "" : ", ";
    if (last - i >= 2) {
      list += std::to_string(ranks[i]) + ", " + std::to_string(ranks[i + 1]) + ", ..., " + std::to_string(ranks[last]);
      i = last + 1;
    } else
      list += std::to_string(ranks[i++]);
  }
  return "       the same for rank" + std::string(ranks.size() > 1 ? "s " : " ") + list + " (rank " +
         std::to_string(first) + "'s programs)\n";
}

/// Bytes one rank sends per step for a collective node of a local program.
static double commBytes(const Node &n) {
  double parts = static_cast<double>(n.intAttr("parts", 1));
  double in = 0; // a bucketed all-reduce reduces all its operands
  for (const Value *v : n.inputs())
    in += static_cast<double>(v->type().numel() * dtypeSize(v->type().dtype));
  double out = 0; // a bucketed all-gather gathers all its operands
  for (const Value *v : n.outputs())
    out += static_cast<double>(v->type().numel() * dtypeSize(v->type().dtype));
  if (n.op() == "AllReduce")
    return 2 * (parts - 1) / parts * in;
  if (n.op() == "AllGather")
    return (parts - 1) / parts * out;
  return (parts - 1) / parts * in; // ReduceScatter
}

/// ZeRO's model states per rank for this plan's parameters (rank 0's
/// shard: Ψ) at every stage, by the paper's formula (tools/ZeroMemory.h).
static void printZeroFormula(llvm::raw_ostream &os, const Plan &plan) {
  // Per rank: under a pipeline its stages' parameters (the largest rank's).
  std::map<int64_t, double> byRank;
  for (size_t i = 0; i < plan.paramTypes.size(); ++i)
    byRank[plan.paramStages.empty() ? 0 : plan.paramStages[i] % plan.stages()] +=
        static_cast<double>(plan.paramTypes[i].numel());
  double psi = 0;
  for (const auto &[rank, n] : byRank)
    psi = std::max(psi, n);
  int64_t nd = 1;
  for (const MeshAxis &a : plan.mesh.axes)
    if (a.name == mesh_axis::kData)
      nd = a.size;
  os << llvm::format("ZeRO model states per rank (GB = 1e9 bytes; psi = %.6g parameters per rank, dp = %lld; "
                     "parameters + gradients + optimizer states; this plan: --zero %lld):\n",
                     psi, static_cast<long long>(nd), static_cast<long long>(plan.zero));
  for (int stage = 0; stage <= 3; ++stage) {
    os << "  stage " << stage;
    for (const StateBytesPerParameter *b : {&kMixedPrecision, &kFp32}) {
      ModelStates m = zeroModelStates(psi, nd, stage, *b);
      os << llvm::format("   %s: %.3f = %.3f + %.3f + %.3f", b->name, m.total() / 1e9, m.params / 1e9,
                         m.grads / 1e9, m.optimizer / 1e9);
    }
    os << "\n";
  }
}

/// The coverage lines; a deep model's repeat per layer, so beyond 16 lines
/// those that differ only in their numbers (layer indices) are printed once,
/// with how many more there are. A pipeline's lines are each a stage's own
/// (its layers, cost and cut): always printed whole.
static void printCoverage(llvm::raw_ostream &os, const std::vector<std::string> &lines) {
  auto shape = [](llvm::StringRef line) {
    if (line.startswith("pipeline"))
      return line.str();
    std::string key;
    for (char c : line)
      if (!std::isdigit(static_cast<unsigned char>(c)) || key.empty() || key.back() != '#')
        key += std::isdigit(static_cast<unsigned char>(c)) ? '#' : c;
    return key;
  };
  std::map<std::string, size_t> count;
  if (lines.size() > 16)
    for (const std::string &l : lines)
      ++count[shape(l)];
  std::set<std::string> printed;
  for (const std::string &l : lines) {
    if (lines.size() <= 16) {
      os << "  " << l << "\n";
      continue;
    }
    std::string key = shape(l);
    if (!printed.insert(key).second)
      continue;
    os << "  " << l;
    if (size_t more = count[key] - 1)
      os << "  (and " << more << " more like it)";
    os << "\n";
  }
}

int inspectMain() {
  const char *tool = "partita inspect";
  if (isCheckpointFolder(dir))
    return inspectCheckpoint(dir, allInitializers);
  auto plan = readPlan(path("plan.json"));
  if (!plan)
    return reportError(tool, plan.takeError());
  if (auto err = rt::checkPipelineSchedule(inspectSchedule, plan->virtualStages))
    return reportError(tool, std::move(err));
  if (auto err = rt::checkMicroBatches(microBatches, plan->stages(), plan->virtualStages))
    return reportError(tool, std::move(err));
  auto device = rt::DeviceRegistry::get().find(inspectDevice);
  if (!device)
    return reportError(tool, device.takeError());
  if (onlyRank.getNumOccurrences() && (onlyRank < 0 || onlyRank >= plan->worldSize()))
    return reportError(tool, fail("--rank " + llvm::Twine(onlyRank.getValue()) + ": the plan has ranks 0.." +
                                  llvm::Twine(plan->worldSize() - 1) + " (" + plan->mesh.str() + ")"));
  auto &os = llvm::outs();
  os << "plan: " << plan->mesh.str() << ", " << plan->worldSize() << " ranks\n";
  if (plan->precision != "fp32")
    os << "precision: " << plan->precision << " parameters, activations and gradients (held and saved in "
       << plan->precision << "; each collective's type is listed below), fp32 compute, fp32 master weights beside the AdamW "
       << "moments (partitioned with them under ZeRO)" << (plan->precision == "fp16" ? "; loss scaling at launch" : "")
       << "\n";
  for (const auto &[axis, gs] : plan->groups) {
    os << "  groups along " << axis << ":";
    // Thousands of ranks make hundreds of groups: the first ones and the last.
    for (size_t k = 0; k < gs.size(); ++k) {
      if (gs.size() > 8 && k == 3) {
        os << " ...";
        k = gs.size() - 1;
      }
      os << " [";
      for (size_t i = 0; i < gs[k].size(); ++i)
        os << (i ? "," : "") << gs[k][i];
      os << "]";
    }
    if (gs.size() > 8)
      os << " (" << gs.size() << " groups of " << gs.front().size() << ")";
    os << "\n";
  }
  os << "\ncoverage:\n";
  if (plan->coverage.empty())
    os << "  (single device: nothing sharded)\n";
  printCoverage(os, plan->coverage);
  if (!plan->initializers.empty()) { // training plans: parameters and frozen buffers
    size_t trainable = 0;
    for (const InitializerClass &c : plan->initializers)
      trainable += c.trainable;
    os << "\ninitializers: " << trainable << " trainable, " << plan->initializers.size() - trainable << " frozen\n";
    // A large model's trainable list runs to thousands of lines: by default
    // the frozen ones (what will not train is what a user checks).
    bool listTrainable = allInitializers || trainable <= 32;
    for (const InitializerClass &c : plan->initializers)
      if (listTrainable || !c.trainable)
        os << "  " << (c.trainable ? "trainable " : "frozen    ") << c.name << ": " << c.reason << "\n";
    if (!listTrainable)
      os << "  (the " << trainable << " trainable ones with --all-initializers)\n";
  }

  // The IR (a 175B plan's runs to megabytes) only when asked for.
  if (printIr || onlyRank >= 0) {
    std::string irFile = path("global.pir");
    for (const RankPlan &r : plan->ranks) // dp replicas share their program's folder
      if (r.rank == onlyRank && llvm::StringRef(r.program(kForwardProgram)).endswith(".onnx"))
        irFile = path(llvm::StringRef(r.program(kForwardProgram)).drop_back(5).str() + ".pir");
    auto ir = llvm::MemoryBuffer::getFile(irFile);
    if (!ir)
      return reportError(tool, llvm::createStringError(ir.getError(), "cannot read " + irFile));
    os << "\n" << (onlyRank >= 0 ? "rank " + std::to_string(onlyRank) + " program" : std::string("sharded IR"))
       << " (" << irFile << "):\n" << (*ir)->getBuffer() << "\n";
  } else {
    os << "\n(the sharded IR: --ir; a rank's program: --rank k)\n";
  }

  char header[128];
  std::snprintf(header, sizeof header, "%-6s %14s %16s %14s %18s\n", "rank", "weights MB", "activations MB",
                "collectives", "comm MB/step");
  os << header;
  /// What one program costs; dp replicas share a program, sized once.
  struct Sizes {
    double weights = 0, arena = 0, outputs = 0, comm = 0, params = 0, grads = 0, moments = 0, masters = 0,
           gradSums = 0;
    int collectives = 0;
    double kernels[rt::kMemoryCategories] = {}; // bytes the kernels keep, by category
    double scratch[rt::kMemoryCategories] = {}; // the kernels' scratch regions (shared by a rank's programs)
    double summedInside = 0; // gradient outputs whose reduce-scatter sums the micro-batches (ZeRO-1)
    double sends = 0;        // partita.Send bytes per run (pipeline edges)
    std::set<int64_t> sendTo; // their stages
    std::vector<std::string> lines;
  };
  std::map<std::string, Sizes> sized;
  // + send copies' bound, and the ranks running the same programs
  std::vector<std::tuple<int, rt::MemoryLedger::Bytes, size_t, size_t, std::vector<int64_t>>> memoryLines;
  // One program's sizes (cached by file: dp replicas share theirs).
  auto sizeOf = [&](const std::string &rel) -> llvm::Expected<const Sizes *> {
    if (auto it = sized.find(rel); it != sized.end())
      return &it->second;
    // Weights by reference: typed, never read.
    auto g = importOnnx(path(rel), compiledProgramImport(plan->weightFilePaths()));
    if (!g)
      return g.takeError();
    SizingDevice sizing((*device)->kind);
    rt::markUpdatedWeights(**g, *plan);
    auto program = rt::Program::load(**g, sizing, nullptr, /*readWeights=*/false);
    if (!program)
      return program.takeError();
    Sizes z;
    for (const Node *n : (*g)->nodes())
      if (n->domain() == "partita" && n->hasAttr("parts") && !n->is("ShardSlice", "partita")) { // a slice moves nothing
        ++z.collectives;
        z.comm += commBytes(*n);
        std::string what = n->numInputs() > 1 ? "bucket of " + std::to_string(n->numInputs())
                                              : n->input(0)->type().str();
        z.lines.push_back(llvm::formatv("  {0,-14} {1,-22} {2,10:f3} MB  {3} (over {4})", n->op(), what,
                                        commBytes(*n) / 1e6, n->output()->name(), n->stringAttr("axis", "")));
      }
    for (const Node *n : (*g)->nodes())
      if (n->is("Send", "partita")) {
        z.sends += static_cast<double>(n->input(0)->type().numel() * static_cast<int64_t>(dtypeSize(n->input(0)->type().dtype)));
        z.sendTo.insert(n->intAttr("peer", 0));
      }
    z.weights = static_cast<double>((*program)->stats().weightBytes);
    z.arena = static_cast<double>((*program)->stats().arenaBytes);
    z.outputs = static_cast<double>((*program)->stats().outputBytes);
    for (size_t c = 0; c < rt::kMemoryCategories; ++c) {
      z.kernels[c] = static_cast<double>((*program)->kernelBytes(static_cast<rt::MemoryCategory>(c)));
      z.scratch[c] = static_cast<double>((*program)->scratchBytes(static_cast<rt::MemoryCategory>(c)));
    }
    for (const Value *out : (*g)->outputs())
      if ((*program)->deferredInside(out->name()))
        z.summedInside += static_cast<double>(out->type().numel() * static_cast<int64_t>(dtypeSize(out->type().dtype)));
    for (const std::string &name : plan->params) {
      if (const rt::TensorView *p = (*program)->staticTensor(name))
        z.params += static_cast<double>(p->bytes());
      // Mixed precision's float32 master copies (half-parameters): optimizer states.
      if (const rt::TensorView *m = (*program)->staticTensor(optimizer_io::master(name)))
        z.masters += static_cast<double>(m->bytes());
    }
    // The optimizer's state as the step reads it: whole, or under ZeRO the
    // rank's part (moments from stage 1, gradients from stage 2).
    for (const Value *in : (*g)->inputs()) {
      llvm::StringRef n(in->name());
      double bytes = static_cast<double>(in->type().numel() * static_cast<int64_t>(dtypeSize(in->type().dtype)));
      if (n.startswith(optimizer_io::gradient(""))) {
        z.grads += bytes;
        // Over micro-batches the runtime sums gradients in float32, half ones too (GradientAccumulator.h).
        z.gradSums += static_cast<double>(in->type().numel() * 4);
      }
      else if (n.startswith(optimizer_io::moment1("")) || n.startswith(optimizer_io::moment2("")))
        z.moments += bytes;
    }
    return &sized.emplace(rel, std::move(z)).first->second;
  };
  // Ranks that run the same programs (dp replicas) are sized and printed
  // once, with the others named after them.
  std::map<std::map<std::string, std::string>, size_t> groupOf; // programs -> index in sameAs
  std::vector<std::vector<int64_t>> sameAs;                     // per printed rank: the others
  for (const RankPlan &r : plan->ranks) {
    if (onlyRank >= 0 && r.rank != onlyRank)
      continue;
    if (auto [it, added] = groupOf.try_emplace(r.programs, sameAs.size()); !added) {
      sameAs[it->second].push_back(r.rank);
      continue;
    }
    sameAs.emplace_back();
  }
  size_t group = 0;
  for (const RankPlan &r : plan->ranks) {
    if ((onlyRank >= 0 && r.rank != onlyRank) || groupOf.at(r.programs) != group)
      continue; // another's replica, printed with it
    const std::vector<int64_t> &others = sameAs[group++];
    // The rank's programs together, in schedule order: they share one arena
    // (the largest; the training loop's Program::shareArena), each output
    // has a buffer of its own (the forward's saved activations among them).
    Sizes z;
    // What the runtime will hold, by the categories its MemoryLedger counts
    // (launch --memory): everything is made by the end of the first step and
    // kept, so the peak is the sum.
    rt::MemoryLedger::Bytes predicted{};
    double summedInside = 0;
    auto add = [&](rt::MemoryCategory c, double bytes) { predicted[static_cast<size_t>(c)] += static_cast<size_t>(bytes); };
    // With virtual stages the rank's programs repeat per model chunk (forward.1, ...).
    std::vector<std::string> names;
    for (int64_t k = 0; k < plan->virtualStages; ++k)
      for (const std::string &base : plan->scheduleOrder)
        names.push_back(chunkProgram(base, k * plan->stages(), *plan));
    for (const std::string &name : names) {
      const std::string base = llvm::StringRef(name).split('.').first.str(); // forward.1 is a forward
      auto one = sizeOf(r.program(name));
      if (!one)
        return reportError(tool, one.takeError());
      add(rt::MemoryCategory::Parameters, (*one)->weights - (*one)->masters);
      add(rt::MemoryCategory::OptimizerStates, (*one)->masters);
      if (base != optimizer_io::kStep)
        add(base == optimizer_io::kBackward ? rt::MemoryCategory::Gradients : rt::MemoryCategory::Activations,
            (*one)->outputs);
      for (size_t c = 0; c < rt::kMemoryCategories; ++c) {
        add(static_cast<rt::MemoryCategory>(c), (*one)->kernels[c]);
        z.scratch[c] = std::max(z.scratch[c], (*one)->scratch[c]); // the largest program's, as z.arena
      }
      summedInside += (*one)->summedInside;
      z.weights += (*one)->weights;
      z.arena = std::max(z.arena, (*one)->arena);
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
      z.sends += (*one)->sends * std::max(1, microBatches.getValue()); // forward and backward: once per micro-batch
      z.sendTo.insert((*one)->sendTo.begin(), (*one)->sendTo.end());
      for (const std::string &l : (*one)->lines)
        z.lines.push_back(l + (name == kForwardProgram ? "" : " [" + name + "]"));
    }
    add(rt::MemoryCategory::Activations, z.arena);
    for (size_t c = 0; c < rt::kMemoryCategories; ++c)
      add(static_cast<rt::MemoryCategory>(c), z.scratch[c]);
    add(rt::MemoryCategory::Activations, inFlightBytes(*plan, r));
    add(rt::MemoryCategory::OptimizerStates, z.moments);
    if (microBatches > 1) // the gradient sums over micro-batches the runtime keeps
      add(rt::MemoryCategory::Gradients, z.gradSums - summedInside);
    size_t peak = 0;
    for (size_t bytes : predicted)
      peak += bytes;
    // A step's sends, its programs' and a shared weight's gradient: each
    // copy lives until its receiver has taken it, at the latest the end of
    // the step (PendingSends::drain).
    const double shared = sharedGradientBytes(*plan, r, z.sendTo);
    memoryLines.push_back({r.rank, predicted, peak, static_cast<size_t>(z.sends + shared), others});
    os << llvm::format("%-6lld %14.3f %16.3f %14d %18.3f\n", static_cast<long long>(r.rank), z.weights / 1e6,
                       (z.arena + z.outputs) / 1e6, z.collectives, z.comm / 1e6);
    if (!r.program(optimizer_io::kStep).empty()) {
      // Training: the parameters this rank updates, the gradients it
      // accumulates and AdamW's two moments, as the step reads them (under
      // ZeRO the rank's parts; the collectives are among those above).
      os << llvm::format("       training: parameters %.3f MB, gradients %.3f MB, AdamW moments %.3f MB",
                         z.params / 1e6, z.grads / 1e6, z.moments / 1e6);
      if (z.masters > 0)
        os << llvm::format(", fp32 master weights %.3f MB", z.masters / 1e6);
      os << "\n";
    }
    if (!z.sendTo.empty())
      os << llvm::format("       pipeline: sends %.3f MB/step to stage(s) %s (%d micro-batch(es) x its partita.Send",
                         (z.sends + shared) / 1e6,
                         llvm::join(llvm::map_range(z.sendTo, [](int64_t t) { return std::to_string(t); }), ",").c_str(),
                         std::max(1, microBatches.getValue()))
         << (shared > 0 ? llvm::formatv(", and {0:f3} MB of shared-weight gradients once)\n", shared / 1e6).str()
                        : std::string(")\n"));
    if (!others.empty())
      os << sameForRanks(others, r.rank);
    if (r.rank == std::max(0, onlyRank.getValue()) && !z.lines.empty()) {
      os << "  collectives of rank " << r.rank << " (bytes sent per step):\n";
      for (const auto &l : z.lines)
        os << l << "\n";
    }
  }
  os << "\n";
  for (const auto &[rank, bytes, peak, sends, others] : memoryLines) {
    rt::printMemoryLine(os, rank, "predicted", bytes, peak);
    if (plan->stages() > 1)
      rt::printSendCopiesLine(os, rank, "predicted", sends);
    if (!others.empty())
      os << sameForRanks(others, rank);
  }
  if (!plan->paramTypes.empty())
    printZeroFormula(os, *plan);
  return 0;
}

} // namespace partita
