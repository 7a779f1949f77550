//===- RunCommand.cpp - partita run: one model on one CPU rank ------------===//
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

static cl::SubCommand runCmd("run", "Run an ONNX model on one CPU rank");
static cl::opt<std::string> model(cl::Positional, cl::desc("<model.onnx>"), cl::sub(runCmd), cl::Required);
static cl::list<std::string> inputs("input", cl::desc("An input: NAME=FILE.npy"), cl::sub(runCmd));
static cl::opt<std::string> outDir("output-dir", cl::desc("Folder for the outputs (NAME.npy)"), cl::sub(runCmd),
                                   cl::Required);
static cl::opt<int> threads("threads", cl::desc("Threads (default: all cores)"), cl::init(0), cl::sub(runCmd));
static cl::opt<int> repeat("repeat", cl::desc("Run this many times and report the median time"), cl::init(1),
                           cl::sub(runCmd));
static cl::opt<bool> profile("profile", cl::desc("Print time per op type"), cl::init(false), cl::sub(runCmd));
static cl::opt<bool> stats("stats", cl::desc("Print memory plan and timing"), cl::init(false), cl::sub(runCmd));

bool runSelected() { return static_cast<bool>(runCmd); }

int runMain() {
  const char *tool = "partita run";
  if (threads < 0 || repeat < 1)
    return reportError(tool, llvm::createStringError(llvm::inconvertibleErrorCode(),
                                                     "--threads must be >= 0 and --repeat >= 1"));
  if (threads > 0)
    omp_set_num_threads(threads);
  auto tensors = readInputFiles(inputs);
  if (!tensors)
    return reportError(tool, tensors.takeError());
  std::vector<std::string> reads{model.getValue()};
  for (std::string &file : inputFilePaths(inputs))
    reads.push_back(std::move(file));
  auto staged = StagedOutput::begin(outDir, "run", "--output-dir", reads);
  if (!staged)
    return reportError(tool, staged.takeError());
  ImportOptions opts;
  opts.shapeFlag = "--input";
  for (const auto &e : *tensors)
    opts.inputShapes[e.getKey()] = e.second.shape();
  if (auto ids = tokenIdsShape(*tensors)) // the dynamic shape of an input fillRoleInputs may fill
    for (const char *name : kFillableInputs)
      opts.dynamicDimHints[name] = *ids;
  auto g = importOnnx(model, opts);
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
  RunOptions ro;
  ro.repeat = repeat;
  ro.profile = profile;
  auto result = runOnCpu(**g, *tensors, ro);
  if (!result)
    return reportError(tool, result.takeError());
  if (auto err = rt::writeNpyFiles(staged->path(), result->names, result->outputs))
    return reportError(tool, std::move(err));
  if (auto err = staged->commit())
    return reportError(tool, std::move(err));
  if (stats)
    llvm::outs() << result->statsLine << "\n";
  if (profile)
    llvm::outs() << result->profileTable;
  return 0;
}

} // namespace partita
