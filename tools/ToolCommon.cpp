//===- ToolCommon.cpp -----------------------------------------------------===//
#include "runtime/core/DeviceRegistry.h"
#include "runtime/core/DeviceTensor.h"
#include "tools/ToolCommon.h"
#include "compiler/ir/Parser.h"
#include "llvm/Support/MemoryBuffer.h"
#include "runtime/executor/Program.h"
#include "runtime/schedule/InferenceSchedule.h"
#include "runtime/io/Npy.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"
#include <algorithm>
#include <chrono>
#include <sstream>
#include <omp.h>

namespace partita {

bool looksLikeOnnx(llvm::StringRef path, llvm::StringRef contents) {
  return path.endswith(".onnx") || contents.ltrim().startswith("<");
}

llvm::Expected<std::unique_ptr<Graph>> loadGraph(llvm::StringRef path, const ImportOptions &opts) {
  if (path.endswith(".onnx"))
    return importOnnx(path, opts);
  auto buf = llvm::MemoryBuffer::getFile(path);
  if (!buf)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   path + ": cannot read file: " + buf.getError().message());
  return loadGraphFromText((*buf)->getBuffer(), path, opts);
}

llvm::Expected<std::unique_ptr<Graph>> loadGraphFromText(llvm::StringRef text, llvm::StringRef path,
                                                         const ImportOptions &opts) {
  if (looksLikeOnnx(path, text))
    return importOnnx(path, opts);
  return parseGraph(text, path);
}

llvm::Expected<llvm::StringMap<Tensor>> readInputFiles(llvm::ArrayRef<std::string> specs) {
  llvm::StringMap<Tensor> inputs;
  for (const auto &spec : specs) {
    auto [name, file] = llvm::StringRef(spec).split('=');
    if (name.empty() || file.empty())
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "--input '" + spec + "': expected NAME=FILE.npy");
    if (inputs.count(name))
      return llvm::createStringError(llvm::inconvertibleErrorCode(), "--input " + name + " is given twice");
    auto t = rt::readNpy(file);
    if (!t)
      return t.takeError();
    inputs[name] = *t;
  }
  return inputs;
}

std::vector<std::string> inputFilePaths(llvm::ArrayRef<std::string> specs) {
  std::vector<std::string> files;
  for (const std::string &spec : specs)
    files.push_back(llvm::StringRef(spec).split('=').second.str());
  return files;
}

llvm::Expected<RunResult> runOnDevice(const Graph &g, const llvm::StringMap<Tensor> &inputs, const RunOptions &opts) {
  auto device = rt::DeviceRegistry::get().create(opts.device);
  if (!device)
    return device.takeError();
  auto program = rt::Program::load(g, **device);
  if (!program)
    return program.takeError();
  return runLoaded(**program, **device, inputs, opts);
}

llvm::Expected<RunResult> runLoaded(rt::Program &program, rt::Device &device, const llvm::StringMap<Tensor> &inputs,
                                    const RunOptions &opts) {
  program.setProfiling(opts.profile);
  // Inputs on the device (the host bytes themselves where it shares host memory).
  llvm::StringMap<rt::TensorView> views;
  std::vector<rt::DeviceTensor> onDevice;
  for (const auto &entry : inputs) {
    auto on = rt::DeviceTensor::upload(device, entry.second, rt::MemoryCategory::Activations,
                                       "input " + entry.getKey());
    if (!on)
      return on.takeError();
    views[entry.getKey()] = on->view();
    onDevice.push_back(std::move(*on));
  }
  RunResult result;
  rt::InferenceSchedule schedule;
  rt::InferenceRun run(program, views);
  if (opts.repeat > 1) { // warm-up (oneDNN JIT, first-touch pages), not timed
    if (auto err = rt::runStep(schedule, run))
      return std::move(err);
    if (auto err = device.finishWork())
      return std::move(err);
    program.clearProfile();
  }
  for (int i = 0; i < opts.repeat; ++i) {
    auto start = std::chrono::steady_clock::now();
    if (auto err = rt::runStep(schedule, run))
      return std::move(err);
    if (auto err = device.finishWork()) // timed to its end (a queueing device returns at launch)
      return std::move(err);
    result.millis.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(result.millis.begin(), result.millis.end());
  const std::vector<rt::TensorView> &outs = run.outputs();
  for (size_t i = 0; i < outs.size(); ++i) {
    const rt::TensorView &v = outs[i];
    auto bytes = std::make_shared<std::vector<uint8_t>>(v.bytes());
    device.copyToHost(bytes->data(), v.data, v.bytes());
    result.names.push_back(program.outputNames()[i]);
    result.outputs.emplace_back(v.dtype, v.shape, std::move(bytes));
  }
  const auto &st = program.stats();
  llvm::raw_string_ostream stats(result.statsLine);
  stats << "kernels " << st.numKernels << ", weights " << st.weightBytes << " B, arena " << st.arenaBytes
        << " B (lower bound " << st.lowerBoundBytes << " B, ratio "
        << llvm::format("%.3f", st.lowerBoundBytes ? double(st.arenaBytes) / st.lowerBoundBytes : 1.0)
        << "), threads " << omp_get_max_threads() << ", median "
        << llvm::format("%.3f", result.millis[result.millis.size() / 2]) << " ms over " << result.millis.size()
        << " runs";
  if (opts.profile) {
    std::vector<std::pair<double, std::string>> rows;
    double total = 0;
    for (const auto &[op, entry] : program.profile()) {
      rows.push_back({entry.first / opts.repeat, op + " x" + std::to_string(entry.second / opts.repeat)});
      total += entry.first / opts.repeat;
    }
    std::sort(rows.rbegin(), rows.rend());
    llvm::raw_string_ostream table(result.profileTable);
    for (const auto &[ms, op] : rows)
      table << llvm::format("%10.3f ms %5.1f%%  ", ms, 100 * ms / total) << op << "\n";
  }
  return result;
}

llvm::Error fail(const llvm::Twine &msg) { return llvm::createStringError(llvm::inconvertibleErrorCode(), msg); }

std::string inDir(llvm::StringRef dir, llvm::StringRef rel) {
  llvm::SmallString<256> p(dir);
  llvm::sys::path::append(p, rel);
  return p.str().str();
}

int reportError(llvm::StringRef tool, llvm::Error err) {
  llvm::errs() << tool << ": error: " << llvm::toString(std::move(err)) << "\n";
  return 1;
}

} // namespace partita
