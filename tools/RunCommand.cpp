//===- RunCommand.cpp - partita run: one model on one CPU rank ------------===//
#include "runtime/core/DeviceRegistry.h"
#include "compiler/pass/PassManager.h"
#include "tools/Commands.h"
#include "runtime/io/Npy.h"
#include "runtime/session/InputRoles.h"
#include "tools/OutputDir.h"
#include "tools/ToolCommon.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"
#include <omp.h>

namespace cl = llvm::cl;

namespace partita {

/// `partita run`'s flags, parsed straight into one struct (the defaults are
/// its own); `run` is what runOnDevice is asked.
struct RunCommandOptions {
  std::string model, outDir;
  std::vector<std::string> inputs; // NAME=FILE.npy
  int threads = 0;
  bool stats = false;
  RunOptions run;
};
static RunCommandOptions opts;

static cl::SubCommand runCmd("run", "Run an ONNX model on one CPU rank");
static Flag<std::string> model(cl::Positional, cl::desc("<model.onnx>"), cl::location(opts.model), cl::sub(runCmd),
                               cl::Required);
static cl::list<std::string, std::vector<std::string>> inputs("input", cl::desc("An input: NAME=FILE.npy"),
                                                              cl::location(opts.inputs), cl::sub(runCmd));
static Flag<std::string> outDir("output-dir", cl::desc("Folder for the outputs (NAME.npy)"), cl::location(opts.outDir),
                                cl::sub(runCmd), cl::Required);
static Flag<int> threads("threads", cl::desc("Threads (default: all cores)"), cl::location(opts.threads),
                         cl::sub(runCmd));
static Flag<int> repeat("repeat", cl::desc("Run this many times and report the median time"),
                        cl::location(opts.run.repeat), cl::sub(runCmd));
static Flag<bool> profile("profile", cl::desc("Print time per op type"), cl::location(opts.run.profile),
                          cl::sub(runCmd));
static Flag<std::string> device("device", cl::desc("The device to run on (default cpu)"), cl::value_desc("NAME"),
                                cl::location(opts.run.device), cl::sub(runCmd));
static Flag<bool> stats("stats", cl::desc("Print memory plan and timing"), cl::location(opts.stats), cl::sub(runCmd));

bool runSelected() { return static_cast<bool>(runCmd); }

int runMain() {
  const char *tool = "partita run";
  if (opts.threads < 0 || opts.run.repeat < 1)
    return reportError(tool, llvm::createStringError(llvm::inconvertibleErrorCode(),
                                                     "--threads must be >= 0 and --repeat >= 1"));
  if (auto known = rt::DeviceRegistry::get().find(opts.run.device); !known) // before any output is staged
    return reportError(tool, known.takeError());
  if (opts.threads > 0)
    omp_set_num_threads(opts.threads);
  auto tensors = readInputFiles(opts.inputs);
  if (!tensors)
    return reportError(tool, tensors.takeError());
  std::vector<std::string> reads{opts.model};
  for (std::string &file : inputFilePaths(opts.inputs))
    reads.push_back(std::move(file));
  auto staged = StagedOutput::begin(opts.outDir, "run", "--output-dir", reads);
  if (!staged)
    return reportError(tool, staged.takeError());
  ImportOptions importOpts;
  importOpts.shapeFlag = "--input";
  for (const auto &e : *tensors)
    importOpts.inputShapes[e.getKey()] = e.second.shape();
  if (auto ids = tokenIdsShape(*tensors)) // the dynamic shape of an input fillRoleInputs may fill
    for (const char *name : kFillableInputs)
      importOpts.dynamicDimHints[name] = *ids;
  auto g = importOnnx(opts.model, importOpts);
  if (!g)
    return reportError(tool, g.takeError());
  PassManager pm;
  if (auto err = pm.addPipeline("canonicalize"))
    return reportError(tool, std::move(err));
  if (auto err = pm.run(**g))
    return reportError(tool, std::move(err));
  std::vector<TensorSpec> specs;
  for (const Value *in : (*g)->inputs())
    specs.push_back({in->name(), in->type()});
  auto filled = fillRoleInputs(specs, *tensors);
  if (!filled)
    return reportError(tool, filled.takeError());
  for (const std::string &line : *filled)
    llvm::outs() << tool << ": " << line << "\n";
  auto result = runOnDevice(**g, *tensors, opts.run);
  if (!result)
    return reportError(tool, result.takeError());
  if (auto err = rt::writeNpyFiles(staged->path(), result->names, result->outputs))
    return reportError(tool, std::move(err));
  if (auto err = staged->commit())
    return reportError(tool, std::move(err));
  if (opts.stats)
    llvm::outs() << result->statsLine << "\n";
  if (opts.run.profile)
    llvm::outs() << result->profileTable;
  return 0;
}

} // namespace partita
