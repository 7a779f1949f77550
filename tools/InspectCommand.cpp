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
#include "tools/Commands.h"
#include "compiler/plan/Plan.h"
#include "tools/ToolCommon.h"
#include "tools/ZeroMemory.h"
#include "runtime/schedule/PipelineSchedule.h"
#include "runtime/train/MemoryReport.h"
#include "llvm/Support/CommandLine.h"
#include <map>
#include <set>
#include "llvm/Support/Format.h"
#include "tools/InspectCheckpoint.h"
#include "planner/MemoryPrediction.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"
#include <cstdio>

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
static cl::opt<bool> inspectOffload("offload-optimizer",
                                    cl::desc("Predict memory as launch --offload-optimizer runs: the optimizer step, "
                                             "its fp32 masters and AdamW's moments in host memory, not the device's"),
                                    cl::sub(inspectCmd));
static cl::opt<bool> allInitializers("all-initializers",
                                     cl::desc("List every trainable initializer (by default: the frozen ones, and "
                                              "the trainable ones when there are at most 32)"),
                                     cl::sub(inspectCmd));

bool inspectSelected() { return static_cast<bool>(inspectCmd); }

static std::string path(llvm::StringRef rel) { return inDir(dir, rel); }

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
  if (inspectOffload && plan->params.empty())
    return reportError(tool, fail("--offload-optimizer needs a plan compiled with --train"));
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
  MemoryPredictionOptions mo;
  mo.dir = dir;
  mo.device = (*device)->kind;
  mo.microBatches = microBatches;
  mo.schedule = inspectSchedule;
  mo.onlyRank = onlyRank;
  mo.offloadOptimizer = inspectOffload;
  MemoryPredictor predictor(*plan, mo);
  auto predicted = predictor.predict();
  if (!predicted)
    return reportError(tool, predicted.takeError());
  for (const RankMemory &m : *predicted) {
    const RankPlan &r = *m.rank;
    const ProgramSizes &z = m.sizes;
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
                         static_cast<double>(m.sendCopies) / 1e6,
                         llvm::join(llvm::map_range(z.sendTo, [](int64_t t) { return std::to_string(t); }), ",").c_str(),
                         std::max(1, microBatches.getValue()))
         << (m.sharedGradients > 0
                 ? llvm::formatv(", and {0:f3} MB of shared-weight gradients once)\n", m.sharedGradients / 1e6).str()
                 : std::string(")\n"));
    if (!m.others.empty())
      os << sameForRanks(m.others, r.rank);
    if (r.rank == std::max(0, onlyRank.getValue()) && !z.lines.empty()) {
      os << "  collectives of rank " << r.rank << " (bytes sent per step):\n";
      for (const auto &l : z.lines)
        os << l << "\n";
    }
  }
  os << "\n";
  for (const RankMemory &m : *predicted) {
    rt::printMemoryLine(os, static_cast<int>(m.rank->rank), "predicted", m.bytes, m.peak);
    if (plan->stages() > 1)
      rt::printSendCopiesLine(os, static_cast<int>(m.rank->rank), "predicted", m.sendCopies);
    if (!m.others.empty())
      os << sameForRanks(m.others, m.rank->rank);
  }
  if (!plan->paramTypes.empty())
    printZeroFormula(os, *plan);
  return 0;
}

} // namespace partita
