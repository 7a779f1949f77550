//===- ToolCommon.h - shared by the command-line tools --------------------===//
#pragma once
#include "compiler/ir/Graph.h"
#include "compiler/onnx/OnnxImport.h"
#include "llvm/Support/Error.h"
#include <memory>

namespace partita {

/// Loads IR text (.pir or anything else) or an ONNX model (.onnx, or text
/// starting with '<') from `path`.
llvm::Expected<std::unique_ptr<Graph>> loadGraph(llvm::StringRef path, const ImportOptions &opts);
/// Same, from text already read (used per chunk of a split input file).
llvm::Expected<std::unique_ptr<Graph>> loadGraphFromText(llvm::StringRef text, llvm::StringRef path,
                                                         const ImportOptions &opts);
bool looksLikeOnnx(llvm::StringRef path, llvm::StringRef contents);
/// How a rank imports a program of a compiled plan (its hash checked against
/// plan.json first): its weights may refer to the original model's files.
ImportOptions compiledProgramImport(llvm::ArrayRef<std::string> weightFiles);

/// Reads NAME=FILE.npy specs (the --input option) into host tensors.
llvm::Expected<llvm::StringMap<Tensor>> readInputFiles(llvm::ArrayRef<std::string> specs);

/// The FILE of each NAME=FILE.npy spec (what a command reads, so that its
/// output folder may not be or hold it).
std::vector<std::string> inputFilePaths(llvm::ArrayRef<std::string> specs);

/// Writes each output as DIR/NAME.npy (creating DIR).
llvm::Error writeOutputFiles(llvm::StringRef dir, llvm::ArrayRef<std::string> names,
                             llvm::ArrayRef<Tensor> values);

/// Runs `g` on `inputs` with a CPU program; results copied to host tensors.
struct RunOptions {
  int repeat = 1;
  bool profile = false;
  const void *env = nullptr; // rt::RuntimeEnv*, for programs with collectives
};
struct RunResult {
  std::vector<std::string> names;
  std::vector<Tensor> outputs;
  std::vector<double> millis; // per timed run, sorted
  std::string statsLine;      // memory plan and timing summary
  std::string profileTable;
};
llvm::Expected<RunResult> runOnCpu(const Graph &g, const llvm::StringMap<Tensor> &inputs, const RunOptions &opts);

/// Prints "tool: error: msg" to stderr and returns 1.
int reportError(llvm::StringRef tool, llvm::Error err);

/// An error with this message.
llvm::Error fail(const llvm::Twine &msg);

/// A flag's number as the user would write it ("-0.5", "nan", "1e+06").
std::string formatNumber(double v);

/// `rel` inside folder `dir`.
std::string inDir(llvm::StringRef dir, llvm::StringRef rel);

} // namespace partita
