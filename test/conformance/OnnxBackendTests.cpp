//===- OnnxBackendTests.cpp - ONNX backend node tests on the CPU runtime ---===//
//
// Runs /usr/share/libonnx-testdata/data/node/*/ (model.onnx + test_data_set_*)
// through the same path as `partita run`: import, canonicalize, load, run.
// Outputs are compared as ONNX's backend runner does (rtol 1e-3, atol 1e-7;
// exact for integers and bools). A test is not applicable, with the reason
// printed, when its opset is outside 13-17, it uses an op the runtime has no
// kernel for, or a dtype Partita does not have. Exits non-zero when fewer than
// 99% of the applicable tests pass.
//
//   partita-onnx-backend-tests DATA_DIR [--verbose] [--filter SUBSTR]
//===----------------------------------------------------------------------===//
#include "compiler/onnx/OnnxImport.h"
#include "compiler/pass/PassManager.h"
#include "runtime/executor/Program.h"
#include "runtime/kernels/KernelRegistry.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"
#include "onnx/onnx_pb.h"
#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>

using namespace partita;

namespace {

enum class Outcome { Pass, Fail, NotApplicable };

struct Result {
  Outcome outcome;
  std::string detail;
};

llvm::Expected<onnx::ModelProto> readModel(const std::string &path) {
  auto buf = llvm::MemoryBuffer::getFile(path);
  onnx::ModelProto m;
  if (!buf || !m.ParseFromArray((*buf)->getBufferStart(), static_cast<int>((*buf)->getBufferSize())))
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "cannot read " + path);
  return m;
}

llvm::Expected<Tensor> readTensor(const std::string &path) {
  auto buf = llvm::MemoryBuffer::getFile(path);
  onnx::TensorProto t;
  if (!buf || !t.ParseFromArray((*buf)->getBufferStart(), static_cast<int>((*buf)->getBufferSize())))
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "cannot read " + path);
  return tensorFromOnnx(t);
}

/// Operand positions whose values a static-shape compiler must know: an input
/// feeding one is bound as a compile-time constant (the program is specialised
/// to it, as `--input-shape` specialises shapes).
bool isShapeOperand(const std::string &op, int index) {
  static const std::map<std::string, std::vector<int>> table = {
      {"Reshape", {1}}, {"Expand", {1}}, {"Slice", {1, 2, 3, 4}}, {"Squeeze", {1}}, {"Unsqueeze", {1}},
      {"Split", {1}}, {"Trilu", {1}}, {"CumSum", {1}}, {"ConstantOfShape", {0}}, {"Range", {0, 1, 2}},
      {"ReduceSum", {1}}, {"Tile", {1}}, {"Dropout", {1, 2}}};
  auto it = table.find(op);
  return it != table.end() && std::count(it->second.begin(), it->second.end(), index);
}

/// ONNX 1.12's test data stores bfloat16 tensors with data_type UINT16.
Tensor relabelBf16(const Tensor &t, DType declared) {
  if (declared == DType::BF16 && t.dtype() == DType::U16)
    return Tensor(DType::BF16, t.shape(), std::make_shared<std::vector<uint8_t>>(t.data(), t.data() + t.byteSize()));
  return t;
}

/// Why the runtime does not claim this test, or "" when it does.
std::string notApplicable(const onnx::ModelProto &m) {
  for (const auto &imp : m.opset_import())
    if ((imp.domain().empty() || imp.domain() == "ai.onnx") && (imp.version() < 13 || imp.version() > 17))
      return "opset " + std::to_string(imp.version()) + " outside 13-17";
  for (const auto &n : m.graph().node()) {
    if (n.op_type() == "Dropout" && n.input_size() > 2 && !n.input(2).empty())
      return "training-mode Dropout draws random masks the reference RNG chose";
    std::string op = n.domain().empty() || n.domain() == "ai.onnx" ? n.op_type() : n.domain() + "." + n.op_type();
    if (!rt::KernelRegistry::get().find(op, rt::kCpuDevice) && op != "Constant")
      return "no kernel for " + op;
  }
  auto typed = [&](const onnx::ValueInfoProto &v) -> std::string {
    if (!v.type().has_tensor_type())
      return "non-tensor value " + v.name();
    if (!dtypeFromOnnx(v.type().tensor_type().elem_type()))
      return "element type " + std::to_string(v.type().tensor_type().elem_type()) + " unsupported";
    return "";
  };
  for (const auto &v : m.graph().input())
    if (auto r = typed(v); !r.empty())
      return r;
  for (const auto &v : m.graph().output())
    if (auto r = typed(v); !r.empty())
      return r;
  return "";
}

std::string compare(const Tensor &expected, const rt::TensorView &got) {
  if (expected.dtype() != got.dtype || expected.shape() != got.shape)
    return "output is " + dtypeName(got.dtype).str() + shapeString(got.shape) + ", expected " + expected.type().str();
  Tensor actual(got.dtype, got.shape,
                std::make_shared<std::vector<uint8_t>>(static_cast<uint8_t *>(got.data),
                                                       static_cast<uint8_t *>(got.data) + got.bytes()));
  bool fp = isFloat(expected.dtype());
  for (int64_t i = 0; i < expected.numel(); ++i) {
    double e = expected.at(i), a = actual.at(i);
    bool ok = fp ? ((std::isnan(e) && std::isnan(a)) || e == a || std::fabs(a - e) <= 1e-7 + 1e-3 * std::fabs(e))
                 : expected.intAt(i) == actual.intAt(i);
    if (!ok)
      return "element " + std::to_string(i) + " is " + std::to_string(a) + ", expected " + std::to_string(e);
  }
  return "";
}

Result runTest(const std::string &dir) {
  std::string modelPath = dir + "/model.onnx";
  auto model = readModel(modelPath);
  if (!model)
    return {Outcome::Fail, llvm::toString(model.takeError())};
  if (std::string why = notApplicable(*model); !why.empty())
    return {Outcome::NotApplicable, why};

  std::vector<std::string> sets;
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(dir, ec), end; it != end && !ec; it.increment(ec))
    if (llvm::sys::path::filename(it->path()).startswith("test_data_set_"))
      sets.push_back(it->path());
  std::sort(sets.begin(), sets.end());
  // Graph inputs that are not initializers, in order: input_K.pb feeds the K-th.
  std::vector<std::string> inputNames;
  std::map<std::string, bool> isInit;
  for (const auto &t : model->graph().initializer())
    isInit[t.name()] = true;
  std::map<std::string, DType> declared;
  for (const auto &v : model->graph().input())
    if (!isInit.count(v.name())) {
      inputNames.push_back(v.name());
      declared[v.name()] = *dtypeFromOnnx(v.type().tensor_type().elem_type());
    }
  // Inputs whose values reach a shape operand through any chain of nodes.
  std::map<std::string, bool> shapeOperand;
  for (const auto &n : model->graph().node())
    for (int i = 0; i < n.input_size(); ++i)
      if (isShapeOperand(n.op_type(), i))
        shapeOperand[n.input(i)] = true;
  const auto &nodes = model->graph().node();
  for (int k = nodes.size() - 1; k >= 0; --k) {
    bool feeds = false;
    for (const auto &out : nodes[k].output())
      feeds |= shapeOperand.count(out) > 0;
    if (feeds)
      for (const auto &in : nodes[k].input())
        shapeOperand[in] = true;
  }
  std::vector<DType> declaredOutputs;
  for (const auto &v : model->graph().output())
    declaredOutputs.push_back(*dtypeFromOnnx(v.type().tensor_type().elem_type()));

  for (const std::string &set : sets) {
    ImportOptions opts;
    llvm::StringMap<Tensor> inputs;
    for (size_t k = 0; k < inputNames.size(); ++k) {
      std::string file = set + "/input_" + std::to_string(k) + ".pb";
      if (!llvm::sys::fs::exists(file))
        continue; // optional input left out
      auto t = readTensor(file);
      if (!t)
        return {Outcome::NotApplicable, llvm::toString(t.takeError())};
      Tensor value = relabelBf16(*t, declared[inputNames[k]]);
      if (shapeOperand.count(inputNames[k]))
        opts.inputValues[inputNames[k]] = value;
      else {
        opts.inputShapes[inputNames[k]] = value.shape();
        inputs[inputNames[k]] = value;
      }
    }
    auto g = importOnnx(modelPath, opts);
    if (!g)
      return {Outcome::Fail, llvm::toString(g.takeError())};
    PassManager pm;
    if (auto err = pm.addPipeline("canonicalize"))
      return {Outcome::Fail, llvm::toString(std::move(err))};
    if (auto err = pm.run(**g))
      return {Outcome::Fail, llvm::toString(std::move(err))};
    rt::CpuDevice device;
    auto program = rt::Program::load(**g, device);
    if (!program)
      return {Outcome::Fail, llvm::toString(program.takeError())};
    llvm::StringMap<rt::TensorView> views;
    for (auto &e : inputs) {
      rt::TensorView v;
      v.dtype = e.second.dtype();
      v.shape = e.second.shape();
      v.data = const_cast<uint8_t *>(e.second.data());
      views[e.getKey()] = v;
    }
    auto outs = (*program)->run(views);
    if (!outs)
      return {Outcome::Fail, llvm::toString(outs.takeError())};
    for (size_t k = 0; k < outs->size(); ++k) {
      std::string file = set + "/output_" + std::to_string(k) + ".pb";
      auto expected = readTensor(file);
      if (!expected)
        return {Outcome::Fail, llvm::toString(expected.takeError())};
      if (std::string diff = compare(relabelBf16(*expected, declaredOutputs[k]), (*outs)[k]); !diff.empty())
        return {Outcome::Fail, llvm::sys::path::filename(set).str() + " output " + std::to_string(k) + ": " + diff};
    }
  }
  return {Outcome::Pass, ""};
}

} // namespace

int main(int argc, char **argv) {
  registerAllPasses();
  if (argc < 2) {
    llvm::errs() << "usage: partita-onnx-backend-tests DATA_DIR [--verbose] [--filter SUBSTR]\n";
    return 2;
  }
  std::string root = argv[1], filter;
  bool verbose = false;
  for (int i = 2; i < argc; ++i) {
    if (std::string(argv[i]) == "--verbose")
      verbose = true;
    else if (std::string(argv[i]) == "--filter" && i + 1 < argc)
      filter = argv[++i];
  }
  std::vector<std::string> dirs;
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(root, ec), end; it != end && !ec; it.increment(ec))
    if (filter.empty() || llvm::StringRef(it->path()).contains(filter))
      dirs.push_back(it->path());
  if (ec || dirs.empty()) {
    llvm::errs() << "partita-onnx-backend-tests: error: no tests under " << root << "\n";
    return 2;
  }
  std::sort(dirs.begin(), dirs.end());
  int passed = 0, failed = 0, na = 0;
  std::map<std::string, int> naReasons;
  for (const auto &dir : dirs) {
    Result r = runTest(dir);
    std::string name = llvm::sys::path::filename(dir).str();
    switch (r.outcome) {
    case Outcome::Pass:
      ++passed;
      if (verbose)
        llvm::outs() << "PASS " << name << "\n";
      break;
    case Outcome::Fail:
      ++failed;
      llvm::outs() << "FAIL " << name << ": " << r.detail << "\n";
      break;
    case Outcome::NotApplicable: {
      ++na;
      std::string reason = r.detail.substr(0, r.detail.find(" for ") == std::string::npos ? r.detail.size()
                                                                                        : r.detail.size());
      ++naReasons[reason];
      if (verbose)
        llvm::outs() << "N/A  " << name << ": " << r.detail << "\n";
      break;
    }
    }
  }
  llvm::outs() << "\nnot applicable, by reason:\n";
  for (const auto &[reason, count] : naReasons)
    llvm::outs() << "  " << count << "  " << reason << "\n";
  int applicable = passed + failed;
  double rate = applicable ? 100.0 * passed / applicable : 0;
  llvm::outs() << "onnx backend node tests: " << passed << " passed, " << failed << " failed, " << na
               << " not applicable (" << llvm::format("%.1f", rate) << "% of " << applicable << " applicable)\n";
  return applicable && rate >= 99.0 ? 0 : 1;
}
