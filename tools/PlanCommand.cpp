//===- PlanCommand.cpp - partita plan -------------------------------------===//
//
// Chooses the parallel layout for a model, a number of devices and a memory
// cap (planner/Search.h), prints the best K with their predicted step time,
// throughput, MFU and memory by category, why the runners-up lose, and the
// layouts rejected for memory; --compile compiles the best into -o.
// --calibrate measures this machine instead (planner/Calibrate.h) and writes
// a machine description.
//===----------------------------------------------------------------------===//
#include "driver/Compile.h"
#include "planner/Search.h"
#include "tools/Calibrate.h"
#include "tools/Commands.h"
#include "tools/OutputDir.h"
#include "tools/ToolCommon.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"
#include <cmath>

namespace cl = llvm::cl;

namespace partita {

static cl::SubCommand planCmd(
    "plan",
    "Choose the parallel layout (tp, sequence parallelism, pp, virtual stages, schedule, dp, ZeRO, micro-batches, "
    "recompute, precision) "
    "for a model on N devices under a memory cap, from its compiled programs and a machine description.\n\n"
    "  Worked example: GPT-3 175B (models/make_gpt_shape.py --layers 96 --d 12288 --heads 96 --vocab 51200) on\n"
    "  1,024 A100-80GB, 8 per node, 1,536 sequences of 2,048 tokens per step:\n"
    "    partita plan gpt3.onnx --devices 1024 --machine a100-80gb --global-batch 1536 --top 3 --budget 180\n"
    "  compiles the most promising layout classes (about 25 s each at this size), then prints the 3 fastest\n"
    "  that fit 85.9 GB (80 GiB) per GPU, the first of them:\n"
    "    1   tp4 pp16 v3 dp16 zero1 interleaved recompute=selective bf16 m=96 mbs=1   (step) 24.4 s ...\n"
    "  with tokens/s, MFU, TFLOP/s per GPU and the peak by category (params / grads / optimizer / activations\n"
    "  / workspace / other, as launch --memory counts them); then why #2 and #3 lose to #1 (by how much, and\n"
    "  in which part: compute, tp or dp collectives, pipeline bubble, optimizer step), the layouts rejected for\n"
    "  memory with the category that breaks the cap, and the compile and launch command lines of the best.\n"
    "  Megatron-LM's published layout for this run (tp 8, pp 16, dp 8, full recompute) is predicted at 34.8 s\n"
    "  a step (127 TFLOP/s per GPU by the paper's count; it measured 140).\n"
    "  --compile -o out/ compiles the best; --explain shows where its time goes; --tp/--pp/--zero/... pin\n"
    "  dimensions. This machine, measured: partita plan --calibrate --devices 2 -o cpu.json, then --machine\n"
    "  cpu.json.");
static cl::opt<std::string> model(cl::Positional, cl::desc("<model.onnx>"), cl::sub(planCmd));
static cl::opt<int> devices("devices", cl::desc("Devices to lay the model out on"), cl::init(0), cl::sub(planCmd));
static cl::opt<int> perNode("gpus-per-node",
                            cl::desc("Devices per node (default: the machine description's); tp stays within a node"),
                            cl::init(0), cl::sub(planCmd));
static cl::opt<std::string> memoryCap("memory-per-device",
                                      cl::desc("The memory a rank may use: 80GB, 79.5GiB, 512MB (default: the "
                                               "machine description's device memory)"),
                                      cl::value_desc("SIZE"), cl::sub(planCmd));
static cl::opt<std::string> machineSpec("machine",
                                        cl::desc("A machine description: a bundled one (a100-80gb, h100-sxm, "
                                                 "h200-sxm) or a JSON file (--calibrate writes one)"),
                                        cl::value_desc("NAME|FILE"), cl::init("h100-sxm"), cl::sub(planCmd));
static cl::opt<int64_t> globalBatch("global-batch",
                                    cl::desc("Sequences per optimizer step, over all replicas (default: the "
                                             "model's batch x devices)"),
                                    cl::init(0), cl::sub(planCmd));
static cl::opt<int> top("top", cl::desc("How many layouts to print"), cl::init(5), cl::sub(planCmd));
static cl::opt<double> budget("budget",
                              cl::desc("Seconds to spend compiling layout classes (the best found so far are "
                                       "then compiled as they are)"),
                              cl::init(60), cl::sub(planCmd));
static cl::list<std::string> precisions("precision", cl::desc("Precisions to consider (default bf16)"),
                                        cl::CommaSeparated, cl::sub(planCmd));
static cl::list<std::string> recomputes("recompute",
                                        cl::desc("Recompute modes to consider (default none,selective,full)"),
                                        cl::CommaSeparated, cl::sub(planCmd));
static cl::list<std::string> schedules("schedule", cl::desc("Pipeline schedules to consider (default 1f1b,gpipe; "
                                                            "interleaved comes with virtual stages)"),
                                       cl::CommaSeparated, cl::sub(planCmd));
static cl::list<std::string> sequenceParallel("sequence-parallel",
                                              cl::desc("Sequence parallelism to consider where tp > 1: on, off "
                                                       "(default off,on)"),
                                              cl::CommaSeparated, cl::sub(planCmd));
static cl::list<int> zeros("zero", cl::desc("ZeRO stages to consider (default 0,1,2,3)"), cl::CommaSeparated,
                           cl::sub(planCmd));
static cl::list<int64_t> microBatchSizes("micro-batch-size",
                                         cl::desc("Micro-batch sizes to consider (the model's batch dimension must "
                                                  "be dynamic; default: the model's)"),
                                         cl::CommaSeparated, cl::sub(planCmd));
static cl::list<int> tps("tp", cl::desc("Only these tp sizes (default: every one that divides, up to --max-tp)"),
                         cl::CommaSeparated, cl::sub(planCmd));
static cl::list<int> pps("pp", cl::desc("Only these pipeline sizes (default: every one that divides)"),
                         cl::CommaSeparated, cl::sub(planCmd));
static cl::list<int> virtuals("virtual-stages", cl::desc("Only these virtual-stage counts (default 1..--max-virtual-stages)"),
                              cl::CommaSeparated, cl::sub(planCmd));
static cl::opt<int> maxVirtual("max-virtual-stages", cl::desc("Most model chunks per pipeline rank (default 4)"),
                               cl::init(4), cl::sub(planCmd));
static cl::opt<int> maxTp("max-tp", cl::desc("Largest tp (default: the devices of a node)"), cl::init(0),
                          cl::sub(planCmd));
static cl::list<std::string> inputShapes("input-shape", cl::desc("Fix an input's shape: NAME=D1xD2..."),
                                         cl::sub(planCmd));
static cl::opt<bool> compileBest("compile", cl::desc("Compile the best layout into -o"), cl::sub(planCmd));
static cl::opt<std::string> outDir("o", cl::desc("--compile: the plan folder; --calibrate: the JSON file"),
                                   cl::value_desc("PATH"), cl::sub(planCmd));
static cl::opt<bool> calibrate("calibrate",
                               cl::desc("Measure this machine (matrix products, memory bandwidth, elementwise rates, "
                                        "MPI between --devices ranks at once) and write its description to -o"),
                               cl::sub(planCmd));
static cl::opt<bool> calibrateWorkerFlag("calibrate-worker", cl::Hidden, cl::sub(planCmd));
static cl::opt<int> workerThreads("threads", cl::Hidden, cl::init(1), cl::sub(planCmd));
static cl::opt<double> clipNorm("clip-grad-norm",
                                cl::desc("The launch's --clip-grad-norm (> 0: the gradient norm is computed every "
                                         "step, and timed)"),
                                cl::init(0), cl::sub(planCmd));
static cl::opt<bool> explain("explain",
                             cl::desc("Also print where the best layout's time goes: its busiest rank's kernels by "
                                      "op type, per micro-batch"),
                             cl::sub(planCmd));
static cl::opt<bool> quiet("quiet", cl::desc("No progress lines"), cl::sub(planCmd));

bool planSelected() { return static_cast<bool>(planCmd); }

/// "80GB" (1e9), "79.5GiB" (2^30), "512MB", "1e10": bytes.
static llvm::Expected<double> parseSize(llvm::StringRef text) {
  llvm::StringRef s = text.trim();
  double unit = 1;
  for (auto [suffix, factor] : {std::pair<const char *, double>{"GiB", 1073741824.0}, {"MiB", 1048576.0},
                                {"GB", 1e9}, {"MB", 1e6}, {"TB", 1e12}, {"B", 1}})
    if (s.consume_back_insensitive(suffix)) {
      unit = factor;
      break;
    }
  double value = 0;
  if (s.trim().getAsDouble(value) || !(value > 0))
    return fail("--memory-per-device " + text + ": a size such as 80GB, 79.5GiB or 512MB");
  return value * unit;
}

static std::string megabytes(size_t bytes) { return llvm::formatv("{0:f1}", static_cast<double>(bytes) / 1e6).str(); }

/// "85.90 GB", or "0.10 MB" below a gigabyte.
static std::string capacity(double bytes) {
  return bytes >= 1e9 ? llvm::formatv("{0:f2} GB", bytes / 1e9).str() : llvm::formatv("{0:f2} MB", bytes / 1e6).str();
}

static void printTable(llvm::raw_ostream &os, const std::vector<planner::Prediction> &rows, size_t count) {
  int width = 58; // the layout column: the longest printed layout (a stage cut's is longer)
  for (size_t i = 0; i < rows.size() && i < count; ++i)
    width = std::max(width, static_cast<int>(rows[i].layout.str().size()));
  char header[256];
  std::snprintf(header, sizeof header, "%-3s %-*s %9s %11s %6s %8s %10s   %s\n", "#", width, "layout", "step ms",
                "tokens/s", "MFU", "TFLOP/s", "peak MB", "params / grads / optimizer / activations / workspace / other MB");
  os << header;
  for (size_t i = 0; i < rows.size() && i < count; ++i) {
    const planner::Prediction &p = rows[i];
    std::string cats;
    for (size_t c = 0; c < p.memory.size(); ++c)
      cats += (c ? " / " : "") + megabytes(p.memory[c]);
    os << llvm::format("%-3zu %-*s %9.2f %11.0f %5.1f%% %8.2f %10s%s  %s\n", i + 1, width, p.layout.str().c_str(),
                       p.stepSeconds * 1e3, p.tokensPerSecond, p.mfu * 100, p.deviceTflops, megabytes(p.peak).c_str(),
                       p.memoryExact ? "" : "~", cats.c_str());
  }
}

/// Why `b` is slower than `a`, by the parts of the step that differ most.
static std::string whySlower(const planner::Prediction &a, const planner::Prediction &b) {
  struct Part {
    const char *name;
    double delta;
  } parts[] = {{"compute", b.time.compute - a.time.compute},
               {"tensor-parallel collectives", b.time.tensorComm - a.time.tensorComm},
               {"data-parallel collectives", b.time.dataComm - a.time.dataComm},
               {"pipeline bubble", b.time.bubble - a.time.bubble},
               {"grad_norm and step", b.time.tail - a.time.tail}};
  std::sort(std::begin(parts), std::end(parts), [](const Part &x, const Part &y) { return x.delta > y.delta; });
  std::string out = llvm::formatv("+{0:f1}% step time:", (b.stepSeconds / a.stepSeconds - 1) * 100).str();
  for (const Part &p : parts)
    if (std::fabs(p.delta) > 0.02 * a.stepSeconds)
      out += llvm::formatv(" {0} {1}{2:f2} ms,", p.name, p.delta > 0 ? "+" : "", p.delta * 1e3).str();
  if (out.back() == ',')
    out.pop_back();
  else
    out += " the parts differ by under 2% each";
  return out;
}

static int runCalibrate() {
  const char *tool = "partita plan --calibrate";
  if (outDir.empty())
    return reportError(tool, fail("-o FILE: where to write the machine description"));
  if (llvm::sys::fs::exists(outDir))
    return reportError(tool, fail("-o " + outDir + ": exists (plan writes a new file, never over one)"));
  auto measured = calibrateThisMachine(devices > 0 ? devices : 1, [&](const std::string &line) {
    if (!quiet)
      llvm::errs() << "partita plan: " << line << "\n";
  });
  if (!measured)
    return reportError(tool, measured.takeError());
  std::error_code ec;
  llvm::raw_fd_ostream os(outDir, ec, llvm::sys::fs::OF_Text);
  if (ec)
    return reportError(tool, fail("-o " + outDir + ": " + ec.message()));
  os << planner::machineJson(*measured);
  llvm::outs() << "partita plan: wrote " << outDir << "\n" << planner::machineJson(*measured);
  return 0;
}

int planMain() {
  const char *tool = "partita plan";
  if (calibrateWorkerFlag)
    return calibrateWorker(workerThreads);
  if (calibrate)
    return runCalibrate();
  if (model.empty())
    return reportError(tool, fail("no model: partita plan model.onnx --devices N"));
  if (devices < 1)
    return reportError(tool, fail("--devices N: how many devices to lay the model out on (at least 1)"));
  if (compileBest && outDir.empty())
    return reportError(tool, fail("--compile needs -o DIR, the plan folder to write"));
  if (top < 1)
    return reportError(tool, fail("--top must be at least 1"));
  auto machine = planner::loadMachine(machineSpec);
  if (!machine)
    return reportError(tool, machine.takeError());
  if (perNode.getNumOccurrences()) {
    if (perNode < 1)
      return reportError(tool, fail("--gpus-per-node must be at least 1"));
    machine->devicesPerNode = perNode;
  }
  double cap = machine->memoryBytes;
  if (!memoryCap.empty()) {
    auto parsed = parseSize(memoryCap);
    if (!parsed)
      return reportError(tool, parsed.takeError());
    cap = *parsed;
  }
  for (const std::string &p : precisions)
    if (p != "fp32" && p != "bf16" && p != "fp16")
      return reportError(tool, fail("--precision " + p + ": fp32, bf16 or fp16"));
  for (const std::string &r : recomputes)
    if (r != "none" && r != "selective" && r != "full")
      return reportError(tool, fail("--recompute " + r + ": none, selective or full"));
  for (const std::string &s : schedules)
    if (s != "1f1b" && s != "gpipe")
      return reportError(tool, fail("--schedule " + s + ": 1f1b or gpipe (interleaved comes with --max-virtual-stages)"));
  for (const std::string &sp : sequenceParallel)
    if (sp != "on" && sp != "off")
      return reportError(tool, fail("--sequence-parallel " + sp + ": on or off"));
  for (int z : zeros)
    if (z < 0 || z > 3)
      return reportError(tool, fail("--zero " + llvm::Twine(z) + ": ZeRO stages are 0 to 3"));
  for (int64_t b : microBatchSizes)
    if (b < 1)
      return reportError(tool, fail("--micro-batch-size must be at least 1"));

  // A folder of this run's own, for a copy of a model whose weights are
  // inside its .onnx (Search.cpp); the candidates are compiled in memory.
  llvm::SmallString<128> scratch;
  if (auto ec = llvm::sys::fs::createUniqueDirectory("partita-plan", scratch))
    return reportError(tool, fail("cannot create a scratch folder: " + ec.message()));
  planner::ScratchFolder removeScratch{std::string(scratch)};

  planner::ProfileContext ctx;
  ctx.model = model;
  ctx.inputShapes = inputShapes;
  ctx.scratch = std::string(scratch);
  ctx.machine = &*machine;
  ctx.devices = devices;
  ctx.clipping = clipNorm > 0;
  planner::SearchOptions so;
  so.devices = devices;
  so.memoryCap = cap;
  so.globalBatch = globalBatch;
  so.top = top;
  so.budgetSeconds = budget;
  so.maxTp = maxTp;
  so.maxVirtualStages = std::max(1, maxVirtual.getValue());
  if (!precisions.empty())
    so.precisions = precisions;
  if (!recomputes.empty())
    so.recomputes = recomputes;
  if (!schedules.empty())
    so.schedules = schedules;
  if (!zeros.empty())
    so.zeroStages = zeros;
  if (!sequenceParallel.empty()) {
    so.sequenceParallel.clear();
    for (const std::string &sp : sequenceParallel)
      so.sequenceParallel.push_back(sp == "on");
  }
  so.microBatchSizes = microBatchSizes;
  so.tps = tps;
  so.pps = pps;
  so.virtualStages = virtuals;
  if (!virtuals.empty())
    so.maxVirtualStages = std::max(so.maxVirtualStages, *std::max_element(virtuals.begin(), virtuals.end()));
  if (!quiet)
    so.progress = [](const std::string &line) { llvm::errs() << "partita plan: " << line << "\n"; };
  auto result = planner::searchLayouts(ctx, so);
  if (!result)
    return reportError(tool, result.takeError());

  auto &os = llvm::outs();
  os << "partita plan: " << model << " on " << devices << " device(s) of " << machine->name << " ("
     << machine->devicesPerNode << " per node), " << capacity(cap) << " per device, "
     << result->globalBatch << " sequences per step\n";
  os << "searched " << result->classes << " layout classes (tp, sequence parallelism, pp, virtual stages, recompute, precision, "
     << "micro-batch size): " << result->skippedForMemory << " too large for memory by a floor under their weights, "
     << "model states or activations, "
     << result->profiled << " compiled and predicted with every ZeRO stage and schedule";
  if (result->unexplored)
    os << ", " << result->unexplored << " left unexplored by --budget " << llvm::format("%g", budget.getValue());
  if (result->skippedForBatch)
    os << "; " << result->skippedForBatch << " (tp, pp, micro-batch size) whose dp does not divide "
       << result->globalBatch << " sequences into whole micro-batches";
  os << "; " << result->compiles << " compiles, " << llvm::format("%.1f", result->seconds) << " s\n\n";
  if (result->classes == 0) {
    os << "no layout to consider: no tp (up to --max-tp " << (maxTp > 0 ? maxTp.getValue() : machine->devicesPerNode)
       << ") and pp of the --tp/--pp/--virtual-stages given divide " << devices
       << " devices with a micro-batch count that divides --global-batch " << result->globalBatch << "\n";
  } else if (result->ranked.empty() && result->rejected.empty()) {
    os << "no layout fits " << capacity(cap) << " per device:";
    if (result->skippedForMemory)
      os << " " << result->skippedForMemory << " class(es) need more by a floor under their memory;";
    if (result->skippedForBatch)
      os << " " << result->skippedForBatch << " do not divide the global batch (--global-batch);";
    if (result->zeroWithoutDp)
      os << " " << result->zeroWithoutDp << " left dp 1, where --zero above 0 has nothing to partition (ZeRO "
         << "needs dp >= 2: allow --zero 0, or fewer --tp/--pp for more devices);";
    if (!result->failed.empty())
      os << " " << result->failed.size() << " do not compile (below);";
    if (result->unexplored)
      os << " " << result->unexplored << " left unexplored (--budget);";
    os << "\n";
  } else if (result->ranked.empty()) {
    os << "no layout fits " << capacity(cap) << " per device\n";
  } else {
    os << "fastest that fit (predicted; peak MB marked ~ is by formula from its class, the rest from the layout's "
          "own programs):\n";
    printTable(os, result->ranked, static_cast<size_t>(top));
    if (result->ranked.size() > 1) {
      os << "\nwhy the runners-up lose to #1:\n";
      for (size_t i = 1; i < result->ranked.size() && i < static_cast<size_t>(top); ++i)
        os << "  #" << i + 1 << " " << result->ranked[i].layout.str() << ": "
           << whySlower(result->ranked[0], result->ranked[i]) << "\n";
    }
  }
  if (!result->rejected.empty()) {
    os << "\nrejected for memory (fastest first; the largest category of the fullest rank):\n";
    for (size_t i = 0; i < result->rejected.size() && i < static_cast<size_t>(top); ++i) {
      const planner::Prediction &p = result->rejected[i];
      os << "  " << p.layout.str() << ": peak " << megabytes(p.peak) << " MB > " << megabytes(static_cast<size_t>(cap))
         << " MB (rank " << p.peakRank << "), " << p.doesNotFit << " "
         << megabytes(*std::max_element(p.memory.begin(), p.memory.end())) << " MB\n";
    }
    if (result->rejected.size() > static_cast<size_t>(top))
      os << "  (" << result->rejected.size() - top << " more)\n";
  }
  if (!result->failed.empty()) {
    os << "\ndo not compile:\n";
    for (const auto &[layout, why] : result->failed)
      os << "  " << layout.str() << ": " << why << "\n";
  }
  if (result->ranked.empty())
    return 1;
  const planner::Layout &best = result->ranked.front().layout;
  if (explain) {
    const planner::Prediction &p = result->ranked.front();
    os << "\nwhere #1's time goes (pipeline rank " << p.busiestStage << ", the busiest; ms):\n";
    for (const auto &[what, ops] : {std::pair<const char *, const std::map<std::string, double> *>{
                                        "forward, per micro-batch", &p.forwardByOp},
                                    {"backward, per micro-batch", &p.backwardByOp},
                                    {"grad_norm and step, per step", &p.tailByOp}}) {
      std::vector<std::pair<double, std::string>> sorted;
      for (const auto &[op, sec] : *ops)
        sorted.push_back({sec, op});
      std::sort(sorted.rbegin(), sorted.rend());
      os << "  " << what << ":";
      for (const auto &[sec, op] : sorted)
        os << llvm::formatv(" {0} {1:f2},", op, sec * 1e3);
      os << "\n";
    }
    os << llvm::formatv("  step: compute {0:f2}, tp collectives {1:f2}, dp collectives {2:f2}, bubble {3:f2}, "
                        "grad_norm and step {4:f2}\n",
                        p.time.compute * 1e3, p.time.tensorComm * 1e3, p.time.dataComm * 1e3, p.time.bubble * 1e3,
                        p.time.tail * 1e3);
  }
  std::string shapes;
  for (const std::string &spec : planner::layoutInputShapes(best, result->context))
    shapes += " --input-shape " + spec;
  os << "\nbest: partita compile " << model << shapes << " " << best.compileFlags() << " -o OUT && partita launch -n "
     << devices << " OUT " << best.launchFlags() << "\n";
  if (!compileBest)
    return 0;
  auto staged = StagedOutput::begin(outDir, "compile", "-o", {model.getValue()});
  if (!staged)
    return reportError(tool, staged.takeError());
  CompileOptions o;
  o.model = model;
  o.inputShapes = planner::layoutInputShapes(best, result->context);
  o.train = true;
  o.tp = best.tp, o.pp = best.pp, o.dp = best.dp, o.virtualStages = best.virtualStages, o.zero = best.zero;
  o.ppLayers = best.stageLayers;
  o.sequenceParallel = best.sequenceParallel;
  o.recompute = best.recompute, o.precision = best.precision;
  o.diagnostic = [](const std::string &line) { llvm::errs() << "partita plan: " << line << "\n"; };
  auto compiled = compileModel(o);
  if (!compiled)
    return reportError(tool, compiled.takeError());
  if (auto err = writeCompiledPlan(*compiled, staged->path()))
    return reportError(tool, std::move(err));
  if (auto err = staged->commit())
    return reportError(tool, std::move(err));
  os << "compiled the best into " << outDir << " (launch it with: partita launch -n " << devices << " " << outDir
     << " " << best.launchFlags() << ")\n";
  return 0;
}

} // namespace partita
