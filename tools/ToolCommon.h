//===- ToolCommon.h - shared by the command-line tools --------------------===//
#pragma once
#include "compiler/ir/Graph.h"
#include "compiler/onnx/OnnxImport.h"
#include "compiler/support/FormatNumber.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Error.h"
#include <memory>

namespace partita {
namespace rt {
class Device;
class Program;
} // namespace rt

/// Loads IR text (.pir or anything else) or an ONNX model (.onnx, or text
/// starting with '<') from `path`.
llvm::Expected<std::unique_ptr<Graph>> loadGraph(llvm::StringRef path, const ImportOptions &opts);
/// Same, from text already read (used per chunk of a split input file).
llvm::Expected<std::unique_ptr<Graph>> loadGraphFromText(llvm::StringRef text, llvm::StringRef path,
                                                         const ImportOptions &opts);
bool looksLikeOnnx(llvm::StringRef path, llvm::StringRef contents);

/// Reads NAME=FILE.npy specs (the --input option) into host tensors.
llvm::Expected<llvm::StringMap<Tensor>> readInputFiles(llvm::ArrayRef<std::string> specs);

/// The FILE of each NAME=FILE.npy spec (what a command reads, so that its
/// output folder may not be or hold it).
std::vector<std::string> inputFilePaths(llvm::ArrayRef<std::string> specs);

/// Runs `g` on `inputs` with a CPU program (the inference schedule);
/// results copied to host tensors.
struct RunOptions {
  int repeat = 1;
  bool profile = false;
  std::string device = "cpu"; // by name (runtime/core/DeviceRegistry.h)
};
struct RunResult {
  std::vector<std::string> names;
  std::vector<Tensor> outputs;
  std::vector<double> millis; // per timed run, sorted
  std::string statsLine;      // memory plan and timing summary
  std::string profileTable;
};
llvm::Expected<RunResult> runOnDevice(const Graph &g, const llvm::StringMap<Tensor> &inputs, const RunOptions &opts);
/// The same with a loaded program (a session's) on its device.
llvm::Expected<RunResult> runLoaded(rt::Program &program, rt::Device &device, const llvm::StringMap<Tensor> &inputs,
                                    const RunOptions &opts);

/// A flag stored in a field of its command's options struct
/// (cl::location(field)): each command parses its flags into one struct.
template <typename T> using Flag = llvm::cl::opt<T, /*ExternalStorage=*/true>;

/// Prints "tool: error: msg" to stderr and returns 1.
int reportError(llvm::StringRef tool, llvm::Error err);

/// An error with this message.
llvm::Error fail(const llvm::Twine &msg);

/// `rel` inside folder `dir`.
std::string inDir(llvm::StringRef dir, llvm::StringRef rel);

} // namespace partita
