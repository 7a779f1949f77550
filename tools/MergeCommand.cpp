//===- MergeCommand.cpp - partita merge: trained shards -> one ONNX model --===//
//
//   partita merge model.onnx compiled/ trained/ -o trained.onnx
//
// Writes the original model with its initializers replaced by the trained
// parameters: each parameter's per-rank shards (trained/rank<k>/<name>.npy)
// are concatenated along the dimension the shards split, and pieces of a
// fused weight (parameters named "<weight>[a:b,c:d]", the views
// split-fused-projections makes) are written back into their box. The result
// is a plain ONNX model any runtime loads.
//===----------------------------------------------------------------------===//
#include "runtime/io/Npy.h"
#include "tools/Commands.h"
#include "tools/Plan.h"
#include "tools/ToolCommon.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"
#include "onnx/onnx_pb.h"
#include <cstring>
#include <fstream>
#include <map>

namespace cl = llvm::cl;

namespace partita {

static cl::SubCommand mergeCmd("merge", "Merge trained parameter shards into one ONNX model");
static cl::opt<std::string> mergeModel(cl::Positional, cl::desc("<model.onnx>"), cl::sub(mergeCmd), cl::Required);
static cl::opt<std::string> mergePlan(cl::Positional, cl::desc("<compiled/>"), cl::sub(mergeCmd), cl::Required);
static cl::opt<std::string> mergeTrained(cl::Positional, cl::desc("<trained/>"), cl::sub(mergeCmd), cl::Required);
static cl::opt<std::string> mergeOut("o", cl::desc("Output model"), cl::sub(mergeCmd), cl::Required);

bool mergeSelected() { return static_cast<bool>(mergeCmd); }

/// One parameter with its shards concatenated along the split dimension.
static llvm::Expected<Tensor> gatherShards(const Plan &plan, const std::string &name, const Shape &full) {
  std::vector<Tensor> parts;
  std::map<int64_t, bool> seenTp;
  for (const RankPlan &r : plan.ranks) {
    int64_t tp = r.coords.count("tp") ? r.coords.at("tp") : 0;
    if (seenTp[tp])
      continue; // dp replicas hold the same shard
    seenTp[tp] = true;
    llvm::SmallString<256> path(mergeTrained);
    llvm::sys::path::append(path, "rank" + std::to_string(r.rank), name + ".npy");
    auto t = rt::readNpy(path);
    if (!t)
      return t.takeError();
    parts.push_back(*t);
  }
  if (parts.size() == 1 || parts[0].shape() == full)
    return parts[0];
  int64_t dim = -1;
  for (size_t d = 0; d < full.size(); ++d)
    if (parts[0].shape()[d] != full[d])
      dim = static_cast<int64_t>(d);
  int64_t outer = numElements(llvm::ArrayRef<int64_t>(full).take_front(dim));
  size_t es = dtypeSize(parts[0].dtype()), row = parts[0].byteSize() / std::max<int64_t>(outer, 1);
  auto bytes = std::make_shared<std::vector<uint8_t>>(numElements(full) * es);
  for (int64_t o = 0; o < outer; ++o)
    for (size_t p = 0; p < parts.size(); ++p)
      std::memcpy(bytes->data() + (o * parts.size() + p) * row, parts[p].data() + o * row, row);
  return Tensor(parts[0].dtype(), full, std::move(bytes));
}

static llvm::Error merge() {
  llvm::SmallString<256> planPath(mergePlan);
  llvm::sys::path::append(planPath, "plan.json");
  auto plan = readPlan(planPath);
  if (!plan)
    return plan.takeError();
  if (plan->params.empty())
    return fail(planPath + ": not a training plan (compile with --train)");
  auto buf = llvm::MemoryBuffer::getFile(mergeModel);
  onnx::ModelProto model;
  if (!buf || !model.ParseFromArray((*buf)->getBufferStart(), static_cast<int>((*buf)->getBufferSize())))
    return fail(mergeModel + ": cannot read the model");
  std::map<std::string, onnx::TensorProto *> inits;
  for (auto &t : *model.mutable_graph()->mutable_initializer())
    inits[t.name()] = &t;
  std::map<std::string, Tensor> updated;
  auto current = [&](const std::string &name) -> llvm::Expected<Tensor *> {
    auto it = updated.find(name);
    if (it != updated.end())
      return &it->second;
    auto init = inits.find(name);
    if (init == inits.end())
      return fail("the model has no initializer '" + name + "'");
    auto t = tensorFromOnnx(*init->second);
    if (!t)
      return t.takeError();
    auto copy = std::make_shared<std::vector<uint8_t>>(t->data(), t->data() + t->byteSize());
    return &(updated[name] = Tensor(t->dtype(), t->shape(), copy));
  };
  for (const std::string &name : plan->params) {
    std::string base;
    Shape start, size;
    bool view = parseWeightViewName(name, base, start, size);
    auto target = current(view ? base : name);
    if (!target)
      return fail("parameter '" + name + "': " + llvm::toString(target.takeError()));
    auto trained = gatherShards(*plan, name, view ? size : (*target)->shape());
    if (!trained)
      return trained.takeError();
    if (!view) {
      if (trained->shape() != (*target)->shape())
        return fail("parameter '" + name + "' is " + trained->type().str() + ", the model's is " + (*target)->type().str());
      std::memcpy(const_cast<uint8_t *>((*target)->data()), trained->data(), trained->byteSize());
      continue;
    }
    const Shape &full = (*target)->shape();
    if (full.size() != start.size())
      return fail("parameter '" + name + "' does not fit weight '" + base + "'");
    size_t es = dtypeSize(trained->dtype());
    int64_t rowLen = size.back(), rows = numElements(size) / std::max<int64_t>(rowLen, 1);
    for (int64_t r = 0; r < rows; ++r) { // copy the box back row by row
      int64_t rem = r, off = start.back(), stride = 1;
      for (int64_t d = static_cast<int64_t>(full.size()) - 2; d >= 0; --d) {
        stride *= full[d + 1];
        off += (start[d] + rem % size[d]) * stride;
        rem /= size[d];
      }
      std::memcpy(const_cast<uint8_t *>((*target)->data()) + off * es, trained->data() + r * rowLen * es, rowLen * es);
    }
  }
  for (auto &[name, t] : updated) {
    onnx::TensorProto *p = inits[name];
    p->clear_float_data();
    p->clear_raw_data();
    p->set_raw_data(std::string(reinterpret_cast<const char *>(t.data()), t.byteSize()));
  }
  std::ofstream out(mergeOut.getValue(), std::ios::binary);
  if (!out || !model.SerializeToOstream(&out))
    return fail(mergeOut + ": cannot write");
  llvm::outs() << "partita: merged " << plan->params.size() << " trained parameters from " << plan->worldSize()
               << " rank(s) into " << mergeOut << "\n";
  return llvm::Error::success();
}

int mergeMain() {
  if (auto err = merge())
    return reportError("partita merge", std::move(err));
  return 0;
}

} // namespace partita
