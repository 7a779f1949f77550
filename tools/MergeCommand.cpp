//===- MergeCommand.cpp - partita merge: trained shards -> one ONNX model --===//
//
//   partita merge model.onnx compiled/ trained/ -o trained.onnx
//
// Writes the original model with its initializers replaced by the trained
// parameters: each parameter's per-rank shards (trained/rank<k>/<name>.npy)
// are concatenated along the dimension the shards split and written where the
// plan's param_targets say: the initializer itself, a box of it (a piece of a
// fused q/k/v weight), its transpose (a Gemm transB weight), and for an
// embedding with a tied head the head too. The result is a plain ONNX model
// any runtime loads.
//===----------------------------------------------------------------------===//
#include "runtime/io/Npy.h"
#include "tools/Commands.h"
#include "tools/OutputDir.h"
#include "tools/Plan.h"
#include "tools/ToolCommon.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"
#include "onnx/onnx_pb.h"
#include <climits>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/wire_format_lite.h>
#include <cstring>
#include <map>
#include <unistd.h>

namespace cl = llvm::cl;

namespace partita {

static cl::SubCommand mergeCmd("merge", "Merge trained parameter shards into one ONNX model");
static cl::opt<std::string> mergeModel(cl::Positional, cl::desc("<model.onnx>"), cl::sub(mergeCmd), cl::Required);
static cl::opt<std::string> mergePlan(cl::Positional, cl::desc("<compiled/>"), cl::sub(mergeCmd), cl::Required);
static cl::opt<std::string> mergeTrained(cl::Positional, cl::desc("<trained/>"), cl::sub(mergeCmd), cl::Required);
static cl::opt<std::string> mergeOut("o", cl::desc("Output model"), cl::sub(mergeCmd), cl::Required);

bool mergeSelected() { return static_cast<bool>(mergeCmd); }

/// One parameter with its shards concatenated along the split dimension.
/// Every shard file is checked against the plan's shard type first, and the
/// shards against the model's weight: the error names the file.
static llvm::Expected<Tensor> gatherShards(const Plan &plan, size_t param, const Shape &full) {
  const std::string &name = plan.params[param];
  if (plan.paramTypes.size() != plan.params.size())
    return fail("the plan records no shard types (compiled by an older Partita? compile again)");
  const TensorType &shard = plan.paramTypes[param];
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
    if (t->type() != shard)
      return fail(path + ": holds " + t->type().str() + ", but parameter '" + name + "' has " + shard.str() +
                  " shards in the plan");
    parts.push_back(*t);
  }
  if (full.size() != shard.shape.size())
    return fail("parameter '" + name + "': the plan's shards are " + shard.str() + ", the model's weight is " +
                TensorType{shard.dtype, full, true}.str());
  int64_t dim = -1, splits = 0;
  for (size_t d = 0; d < full.size(); ++d)
    if (shard.shape[d] != full[d]) {
      dim = static_cast<int64_t>(d);
      ++splits;
    }
  if (dim < 0 && parts.size() >= 1)
    return parts[0];
  if (splits != 1 || shard.shape[dim] * static_cast<int64_t>(parts.size()) != full[dim])
    return fail("parameter '" + name + "': " + llvm::Twine(parts.size()) + " shards of " + shard.str() +
                " do not make the model's weight " + TensorType{shard.dtype, full, true}.str());
  int64_t outer = numElements(llvm::ArrayRef<int64_t>(full).take_front(dim));
  size_t es = dtypeSize(parts[0].dtype()), row = parts[0].byteSize() / std::max<int64_t>(outer, 1);
  auto bytes = std::make_shared<std::vector<uint8_t>>(numElements(full) * es);
  for (int64_t o = 0; o < outer; ++o)
    for (size_t p = 0; p < parts.size(); ++p)
      std::memcpy(bytes->data() + (o * parts.size() + p) * row, parts[p].data() + o * row, row);
  return Tensor(parts[0].dtype(), full, std::move(bytes));
}

/// Writes `trained` into `stored` where target `t` says: the box at t.start of
/// transpose(stored, t.perm).
static llvm::Error writeTarget(Tensor &stored, const Tensor &trained, const ParamTarget &t) {
  Tensor logical = t.perm.empty() ? stored : transposeTensor(stored, t.perm);
  const Shape &full = logical.shape(), &size = trained.shape();
  Shape start = t.start.empty() ? Shape(full.size(), 0) : t.start;
  bool fits = trained.dtype() == logical.dtype() && full.size() == size.size() && start.size() == full.size() &&
              (t.perm.empty() || t.perm.size() == stored.shape().size());
  for (size_t d = 0; fits && d < full.size(); ++d)
    fits = start[d] >= 0 && start[d] + size[d] <= full[d];
  if (!fits)
    return fail("the box does not fit");
  size_t es = dtypeSize(trained.dtype());
  auto bytes = std::make_shared<std::vector<uint8_t>>(logical.data(), logical.data() + logical.byteSize());
  int64_t rowLen = size.empty() ? 1 : size.back(), rows = numElements(size) / std::max<int64_t>(rowLen, 1);
  for (int64_t r = 0; r < rows; ++r) { // copy the box in row by row
    int64_t rem = r, off = full.empty() ? 0 : start.back(), stride = 1;
    for (int64_t d = static_cast<int64_t>(full.size()) - 2; d >= 0; --d) {
      stride *= full[d + 1];
      off += (start[d] + rem % size[d]) * stride;
      rem /= size[d];
    }
    std::memcpy(bytes->data() + off * es, trained.data() + r * rowLen * es, rowLen * es);
  }
  Tensor written(logical.dtype(), full, std::move(bytes));
  if (t.perm.empty()) {
    stored = written;
    return llvm::Error::success();
  }
  std::vector<int64_t> inverse(t.perm.size());
  for (size_t d = 0; d < t.perm.size(); ++d)
    inverse[t.perm[d]] = static_cast<int64_t>(d);
  stored = transposeTensor(written, inverse);
  return llvm::Error::success();
}

/// The metadata key a merged model carries.
static constexpr const char *kMergeMark = "partita.merged_from";

/// `path` is an ONNX model an earlier merge wrote: its top-level
/// metadata_props (field 14) hold kMergeMark. Skips the graph unparsed.
static bool writtenByMerge(llvm::StringRef path) {
  auto buf = llvm::MemoryBuffer::getFile(path, /*IsText=*/false, /*RequiresNullTerminator=*/false);
  if (!buf)
    return false;
  google::protobuf::io::CodedInputStream in(reinterpret_cast<const uint8_t *>((*buf)->getBufferStart()),
                                            static_cast<int>((*buf)->getBufferSize()));
  in.SetTotalBytesLimit(INT_MAX);
  while (uint32_t tag = in.ReadTag()) {
    if (tag >> 3 != 14) {
      if (!google::protobuf::internal::WireFormatLite::SkipField(&in, tag))
        return false;
      continue;
    }
    std::string bytes;
    uint32_t len = 0;
    if (!in.ReadVarint32(&len) || !in.ReadString(&bytes, static_cast<int>(len)))
      return false;
    onnx::StringStringEntryProto entry;
    if (entry.ParseFromString(bytes) && entry.key() == kMergeMark)
      return true;
  }
  return false;
}

/// Writes `model` to `path` through a temporary file beside it, so a failure
/// leaves no half-written model. A file that is there already is replaced
/// only when an earlier merge wrote it, and never when it is the input.
static llvm::Error writeModelFile(const onnx::ModelProto &model, llvm::StringRef path) {
  std::string out = canonicalPath(path), in = canonicalPath(mergeModel);
  if (out == in || llvm::sys::fs::equivalent(out, in)) // the same path, or a hard link to it
    return fail("-o " + path + " is the input model: choose another file");
  if (llvm::sys::fs::exists(out)) {
    if (llvm::sys::fs::is_directory(out))
      return fail("-o " + path + " is a folder: give the merged model's file name");
    if (!writtenByMerge(out))
      return fail("-o " + path + " exists and was not written by partita merge: Partita does not overwrite it");
  }
  llvm::SmallString<256> tmp;
  int fd = -1;
  if (auto ec = llvm::sys::fs::createUniqueFile(out + ".partial-%%%%%%", fd, tmp))
    return fail("cannot create a file beside " + path + ": " + ec.message());
  bool ok = model.SerializeToFileDescriptor(fd); // streams: no second copy of the model in memory
  ok = ::close(fd) == 0 && ok;
  if (!ok || llvm::sys::fs::rename(tmp, out)) {
    llvm::sys::fs::remove(tmp);
    return fail(path + ": cannot write the merged model");
  }
  return llvm::Error::success();
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
  if (plan->paramTargets.size() != plan->params.size())
    return fail(planPath + ": records no param_targets (compiled by an older Partita? compile again)");
  for (size_t i = 0; i < plan->params.size(); ++i) {
    const std::string &name = plan->params[i];
    auto trained = gatherShards(*plan, i, plan->paramTargets[i][0].shape);
    if (!trained)
      return trained.takeError();
    for (const ParamTarget &t : plan->paramTargets[i]) {
      auto target = current(t.initializer);
      if (!target)
        return fail("parameter '" + name + "': " + llvm::toString(target.takeError()));
      if (auto err = writeTarget(**target, *trained, t))
        return fail("parameter '" + name + "' (" + trained->type().str() + ") does not fit initializer '" +
                    t.initializer + "' (" + (*target)->type().str() + "): " + llvm::toString(std::move(err)));
    }
  }
  for (auto &[name, t] : updated) {
    onnx::TensorProto *p = inits[name];
    p->clear_float_data();
    p->clear_raw_data();
    p->set_raw_data(std::string(reinterpret_cast<const char *>(t.data()), t.byteSize()));
  }
  auto *mark = model.add_metadata_props(); // what lets a later merge replace this file
  mark->set_key(kMergeMark);
  mark->set_value(mergeModel);
  if (auto err = writeModelFile(model, mergeOut))
    return err;
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
