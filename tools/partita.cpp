//===- partita.cpp - the user-facing driver -------------------------------===//
//
//   partita compile model.onnx [--input-shape ids=2x16] -o out/
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
#include "tools/ToolCommon.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

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
  llvm::errs() << "partita: error: give a subcommand (partita --help)\n";
  return 1;
}
