//===- partita.cpp - the user-facing driver -------------------------------===//
//
//   partita compile model.onnx [--input-shape ids=2x16] -o out/
//   partita run model.onnx --input ids=ids.npy [...] --output-dir out/ [--threads N]
//
// compile imports the model, canonicalizes it and writes out/model.pir (the IR
// users inspect) and out/model.onnx (the canonical program). Parallel layouts
// (--tp/--pp/--dp > 1, --train, --zero) arrive with the sharding and training
// passes; until then they are refused with an error rather than ignored.
//===----------------------------------------------------------------------===//
#include "compiler/ir/Printer.h"
#include "compiler/ir/Verifier.h"
#include "compiler/onnx/OnnxExport.h"
#include "compiler/pass/PassManager.h"
#include "runtime/core/Device.h"
#include "runtime/executor/Program.h"
#include "runtime/io/Npy.h"
#include "tools/ToolCommon.h"
#include <chrono>
#include <omp.h>
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"
#include <algorithm>

using namespace partita;
namespace cl = llvm::cl;

static cl::SubCommand compileCmd("compile", "Compile an ONNX model into per-rank programs");
static cl::opt<std::string> model(cl::Positional, cl::desc("<model.onnx>"), cl::sub(compileCmd), cl::Required);
static cl::opt<std::string> outDir("o", cl::desc("Output folder"), cl::sub(compileCmd), cl::Required);
static cl::list<std::string> inputShapes("input-shape", cl::desc("Fix an input's shape: NAME=D1xD2..."),
                                         cl::sub(compileCmd));
static cl::opt<int> tp("tp", cl::desc("Tensor-parallel size"), cl::init(1), cl::sub(compileCmd));
static cl::opt<int> pp("pp", cl::desc("Pipeline-parallel size"), cl::init(1), cl::sub(compileCmd));
static cl::opt<int> dp("dp", cl::desc("Data-parallel size"), cl::init(1), cl::sub(compileCmd));
static cl::opt<int> zero("zero", cl::desc("ZeRO stage 0-3"), cl::init(0), cl::sub(compileCmd));
static cl::opt<bool> train("train", cl::desc("Build training programs"), cl::init(false), cl::sub(compileCmd));
static cl::opt<bool> printIR("print-ir", cl::desc("Print the canonical IR to stdout"), cl::init(false),
                             cl::sub(compileCmd));

static cl::SubCommand runCmd("run", "Run an ONNX model on one CPU rank");
static cl::opt<std::string> runModel(cl::Positional, cl::desc("<model.onnx>"), cl::sub(runCmd), cl::Required);
static cl::list<std::string> runInputs("input", cl::desc("An input: NAME=FILE.npy"), cl::sub(runCmd));
static cl::opt<std::string> runOutDir("output-dir", cl::desc("Folder for the outputs (NAME.npy)"),
                                      cl::sub(runCmd), cl::Required);
static cl::opt<int> runThreads("threads", cl::desc("Threads (default: all cores)"), cl::init(0), cl::sub(runCmd));
static cl::opt<int> runRepeat("repeat", cl::desc("Run this many times and report the median time"),
                              cl::init(1), cl::sub(runCmd));
static cl::opt<bool> runProfile("profile", cl::desc("Print time per op type"), cl::init(false), cl::sub(runCmd));
static cl::opt<bool> runStats("stats", cl::desc("Print memory plan and timing"), cl::init(false), cl::sub(runCmd));

static llvm::Error runError(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

static int runModelCommand() {
  const char *tool = "partita run";
  if (runThreads < 0 || runRepeat < 1)
    return reportError(tool, runError("--threads must be >= 0 and --repeat >= 1"));
  if (runThreads > 0)
    omp_set_num_threads(runThreads);
  ImportOptions opts;
  opts.shapeFlag = "--input";
  llvm::StringMap<Tensor> inputs;
  for (const auto &spec : runInputs) {
    auto [name, file] = llvm::StringRef(spec).split('=');
    if (name.empty() || file.empty())
      return reportError(tool, runError("--input '" + spec + "': expected NAME=FILE.npy"));
    auto t = rt::readNpy(file);
    if (!t)
      return reportError(tool, t.takeError());
    if (inputs.count(name))
      return reportError(tool, runError("--input " + name + " is given twice"));
    opts.inputShapes[name] = t->shape();
    inputs[name] = *t;
  }
  auto g = importOnnx(runModel, opts);
  if (!g)
    return reportError(tool, g.takeError());
  for (const auto &entry : inputs) {
    bool known = false;
    for (const Value *in : (*g)->inputs())
      known |= in->name() == entry.getKey();
    if (!known) {
      std::string names;
      for (const Value *in : (*g)->inputs())
        names += (names.empty() ? "" : ", ") + in->name();
      return reportError(tool, runError("--input " + entry.getKey() + ": the model has no such input (its inputs: " +
                                        names + ")"));
    }
  }
  PassManager pm;
  if (auto err = pm.addPipeline("canonicalize"))
    return reportError(tool, std::move(err));
  if (auto err = pm.run(**g))
    return reportError(tool, std::move(err));
  rt::CpuDevice device;
  auto program = rt::Program::load(**g, device);
  if (!program)
    return reportError(tool, program.takeError());
  (*program)->setProfiling(runProfile);
  llvm::StringMap<rt::TensorView> views;
  for (auto &entry : inputs) {
    rt::TensorView v;
    v.dtype = entry.second.dtype();
    v.shape = entry.second.shape();
    v.data = const_cast<uint8_t *>(entry.second.data());
    views[entry.getKey()] = v;
  }
  std::vector<double> times;
  llvm::Expected<std::vector<rt::TensorView>> outs = std::vector<rt::TensorView>{};
  if (runRepeat > 1) { // warm-up (oneDNN JIT, first-touch pages), not timed
    if (auto warm = (*program)->run(views); !warm)
      return reportError(tool, warm.takeError());
    (*program)->clearProfile();
  }
  for (int i = 0; i < runRepeat; ++i) {
    auto start = std::chrono::steady_clock::now();
    outs = (*program)->run(views);
    if (!outs)
      return reportError(tool, outs.takeError());
    times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  if (auto ec = llvm::sys::fs::create_directories(runOutDir))
    return reportError(tool, llvm::createStringError(ec, "cannot create " + runOutDir));
  for (size_t i = 0; i < outs->size(); ++i) {
    const rt::TensorView &v = (*outs)[i];
    llvm::SmallString<256> path(runOutDir);
    llvm::sys::path::append(path, (*program)->outputNames()[i] + ".npy");
    std::vector<uint8_t> host(v.bytes());
    device.copyToHost(host.data(), v.data, v.bytes());
    if (auto err = rt::writeNpy(path, v.dtype, v.shape, host.data()))
      return reportError(tool, std::move(err));
  }
  if (runStats) {
    std::sort(times.begin(), times.end());
    const auto &st = (*program)->stats();
    llvm::outs() << "kernels " << st.numKernels << ", weights " << st.weightBytes << " B, arena " << st.arenaBytes
                 << " B (lower bound " << st.lowerBoundBytes << " B, ratio "
                 << llvm::format("%.3f", st.lowerBoundBytes ? double(st.arenaBytes) / st.lowerBoundBytes : 1.0)
                 << "), threads " << omp_get_max_threads() << ", median " << llvm::format("%.3f", times[times.size() / 2])
                 << " ms over " << times.size() << " runs\n";
  }
  if (runProfile) {
    std::vector<std::pair<double, std::string>> rows;
    double total = 0;
    for (const auto &[op, entry] : (*program)->profile()) {
      rows.push_back({entry.first / runRepeat, op + " x" + std::to_string(entry.second / runRepeat)});
      total += entry.first / runRepeat;
    }
    std::sort(rows.rbegin(), rows.rend());
    for (const auto &[ms, op] : rows)
      llvm::outs() << llvm::format("%10.3f ms %5.1f%%  ", ms, 100 * ms / total) << op << "\n";
  }
  return 0;
}

static llvm::Error notYet(const char *flag, int value) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 llvm::Twine(flag) + " " + llvm::Twine(value) +
                                     ": this build of partita compiles single-device programs only "
                                     "(sharding, pipelining and training are not implemented yet)");
}

static int runCompile() {
  if (tp < 1 || pp < 1 || dp < 1)
    return reportError("partita compile", llvm::createStringError(llvm::inconvertibleErrorCode(),
                                                                  "--tp, --pp and --dp must be >= 1"));
  if (tp > 1)
    return reportError("partita compile", notYet("--tp", tp));
  if (pp > 1)
    return reportError("partita compile", notYet("--pp", pp));
  if (dp > 1)
    return reportError("partita compile", notYet("--dp", dp));
  if (zero != 0)
    return reportError("partita compile", notYet("--zero", zero));
  if (train)
    return reportError("partita compile", notYet("--train", 1));
  ImportOptions opts;
  for (const auto &s : inputShapes)
    if (auto err = parseInputShape(s, opts))
      return reportError("partita compile", std::move(err));
  auto g = importOnnx(model, opts);
  if (!g)
    return reportError("partita compile", g.takeError());
  PassManager pm;
  pm.verifyEach = true;
  if (auto err = pm.addPipeline("canonicalize"))
    return reportError("partita compile", std::move(err));
  if (auto err = pm.run(**g))
    return reportError("partita compile", std::move(err));
  // Write into a temporary folder and rename it into place: no partial output.
  llvm::SmallString<256> tmp(outDir);
  tmp += ".partial";
  llvm::sys::fs::remove_directories(tmp);
  if (auto ec = llvm::sys::fs::create_directories(tmp))
    return reportError("partita compile", llvm::createStringError(ec, "cannot create " + tmp));
  llvm::SmallString<256> irPath(tmp), onnxPath(tmp);
  llvm::sys::path::append(irPath, "model.pir");
  llvm::sys::path::append(onnxPath, "model.onnx");
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(irPath, ec);
    if (ec)
      return reportError("partita compile", llvm::createStringError(ec, "cannot write " + irPath));
    printGraph(**g, os);
  }
  if (auto err = exportOnnx(**g, onnxPath)) {
    llvm::sys::fs::remove_directories(tmp);
    return reportError("partita compile", std::move(err));
  }
  llvm::sys::fs::remove_directories(outDir);
  if (auto ec = llvm::sys::fs::rename(tmp, outDir))
    return reportError("partita compile", llvm::createStringError(ec, "cannot move output to " + outDir));
  if (printIR)
    printGraph(**g, llvm::outs());
  llvm::outs() << "partita: compiled " << model << " (" << (*g)->numNodes() << " nodes, opset "
               << (*g)->opset << ") -> " << outDir << "/model.pir, " << outDir << "/model.onnx\n";
  return 0;
}

int main(int argc, char **argv) {
  registerAllPasses();
  cl::ParseCommandLineOptions(argc, argv, "Partita: ONNX transformers across many devices\n");
  if (compileCmd)
    return runCompile();
  if (runCmd)
    return runModelCommand();
  llvm::errs() << "partita: error: give a subcommand (partita --help)\n";
  return 1;
}
