//===- partita-opt.cpp - run passes on IR text or ONNX, print IR ----------===//
//
//   partita-opt in.pir --passes=fold-constants,dce
//   partita-opt model.onnx --input-shape ids=2x16 --passes=canonicalize
//   partita-opt cases.pir --split-input-file --passes=...   (cases split by // -----)
//   partita-opt train.pir --passes=split-pipeline{stages=2},split-programs   (one graph per part)
//
//===----------------------------------------------------------------------===//
#include "compiler/ir/Printer.h"
#include "compiler/ir/Verifier.h"
#include "compiler/onnx/OnnxExport.h"
#include "compiler/pass/PassManager.h"
#include "tools/ToolCommon.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

using namespace partita;
namespace cl = llvm::cl;

static cl::opt<std::string> inputFile(cl::Positional, cl::desc("<input .pir or .onnx>"), cl::init("-"));
static cl::opt<std::string> passPipeline("passes", cl::desc("Comma-separated passes, e.g. canonicalize"),
                                         cl::init(""));
static cl::list<std::string> inputShapes("input-shape", cl::desc("Fix an input's shape: NAME=D1xD2..."));
static cl::opt<bool> verifyEach("verify-each", cl::desc("Run the verifier after every pass"),
                                cl::init(false));
static cl::opt<bool> splitInput("split-input-file",
                                cl::desc("Treat '// -----' separated chunks as independent inputs"),
                                cl::init(false));
static cl::opt<bool> listPasses("list-passes", cl::desc("List the registered passes and exit"),
                                cl::init(false));
static cl::opt<bool> genericNames("generic-names",
                                  cl::desc("Print values and weights with generic names, no locations"),
                                  cl::init(false));
static cl::opt<std::string> emitOnnx("emit-onnx", cl::desc("Also write the result as ONNX to this file"),
                                     cl::init(""));

static int processOne(llvm::StringRef text, const ImportOptions &opts) {
  auto g = loadGraphFromText(text, inputFile, opts);
  if (!g)
    return reportError("partita-opt", g.takeError());
  if (auto err = verifyGraph(**g))
    return reportError("partita-opt", std::move(err));
  PassManager pm;
  pm.verifyEach = verifyEach;
  if (auto err = pm.addPipeline(passPipeline))
    return reportError("partita-opt", std::move(err));
  // A split pass (split-pipeline, split-programs) leaves several graphs:
  // each is printed, "// -----" between them.
  std::vector<std::unique_ptr<Graph>> graphs;
  graphs.push_back(std::move(*g));
  if (auto err = pm.run(graphs))
    return reportError("partita-opt", std::move(err));
  for (const auto &graph : graphs)
    if (auto err = verifyGraph(*graph))
      return reportError("partita-opt", std::move(err));
  if (!emitOnnx.empty() && graphs.size() != 1)
    return reportError("partita-opt", llvm::createStringError(llvm::inconvertibleErrorCode(),
                                                              "--emit-onnx writes one graph; the passes left " +
                                                                  llvm::Twine(graphs.size())));
  PrintOptions printOpts;
  printOpts.genericNames = genericNames;
  for (size_t i = 0; i < graphs.size(); ++i) {
    if (i)
      llvm::outs() << "// -----\n";
    printGraph(*graphs[i], llvm::outs(), printOpts);
  }
  if (!emitOnnx.empty())
    if (auto err = exportOnnx(*graphs[0], emitOnnx))
      return reportError("partita-opt", std::move(err));
  return 0;
}

int main(int argc, char **argv) {
  registerAllPasses();
  cl::ParseCommandLineOptions(argc, argv, "Partita IR optimizer driver\n");
  if (listPasses) {
    for (const auto &p : PassRegistry::get().all()) {
      llvm::outs() << p.name << "  " << p.summary << "\n    " << p.description << "\n";
      for (const std::string &line : describeOptions(*p.create())) // from the pass's declarations
        llvm::outs() << "    option " << line << "\n";
    }
    return 0;
  }
  ImportOptions opts;
  for (const auto &s : inputShapes)
    if (auto err = parseInputShape(s, opts))
      return reportError("partita-opt", std::move(err));
  if (llvm::StringRef(inputFile).endswith(".onnx"))
    return processOne("", opts);
  auto buf = llvm::MemoryBuffer::getFileOrSTDIN(inputFile);
  if (!buf)
    return reportError("partita-opt", llvm::createStringError(buf.getError(), inputFile + ": cannot read file"));
  llvm::StringRef text = (*buf)->getBuffer();
  if (!splitInput)
    return processOne(text, opts);
  int status = 0;
  size_t lineOffset = 0;
  bool first = true;
  while (true) {
    size_t sep = text.find("// -----");
    llvm::StringRef chunk = text.substr(0, sep);
    if (!first)
      llvm::outs() << "// -----\n";
    first = false;
    llvm::outs().flush();
    // Pad with newlines so diagnostics carry the original file's line numbers.
    std::string padded(lineOffset, '\n');
    padded += chunk.str();
    status |= processOne(padded, opts);
    llvm::errs().flush();
    if (sep == llvm::StringRef::npos)
      break;
    lineOffset += chunk.count('\n');
    text = text.substr(sep + 8);
  }
  return status;
}
