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
//
// Initializers go one at a time from the input (inline, or read from its
// external data) to the output, so memory holds one initializer and one
// parameter, not the model. When the input keeps its weights as external data
// or they pass 1 GiB, the output does too, in OUT.data beside it (location
// relative, as onnx.save_model(save_as_external_data=True) writes it): no
// protobuf nears the 2 GB limit.
//===----------------------------------------------------------------------===//
#include "compiler/ir/WeightStore.h"
#include "compiler/support/OutputFile.h"
#include "runtime/checkpoint/SavedCheckpoint.h"
#include "runtime/checkpoint/StatePlacement.h"
#include "runtime/io/Npy.h"
#include "tools/InspectCheckpoint.h"
#include "tools/Commands.h"
#include "tools/OutputDir.h"
#include "compiler/plan/Plan.h"
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
#include <optional>
#include <unistd.h>

namespace cl = llvm::cl;

namespace partita {

static cl::SubCommand mergeCmd("merge", "Merge trained parameter shards into one ONNX model");
static cl::opt<std::string> mergeModel(cl::Positional, cl::desc("<model.onnx>"), cl::sub(mergeCmd), cl::Required);
static cl::opt<std::string> mergePlan(cl::Positional, cl::desc("<compiled/>"), cl::sub(mergeCmd), cl::Required);
static cl::opt<std::string> mergeTrained(cl::Positional,
                                         cl::desc("<trained/ | checkpoint/>: a training launch's --output-dir, or a "
                                                  "checkpoint of launch --save (any plan of the model names the "
                                                  "parameters then)"),
                                         cl::sub(mergeCmd), cl::Required);
static cl::opt<std::string> mergeOut("o", cl::desc("Output model"), cl::sub(mergeCmd), cl::Required);

bool mergeSelected() { return static_cast<bool>(mergeCmd); }

/// One parameter with its shards concatenated along the split dimension.
/// Every shard file is checked against the plan's shard type first, and the
/// shards against the model's weight: the error names the file. Every
/// data-parallel replica's copy is read too and must equal the first bit for
/// bit (the replicas step in lockstep): a missing, swapped or diverged copy
/// is an error, not silently ignored.
static llvm::Expected<Tensor> gatherShards(const Plan &plan, size_t param, const Shape &full) {
  const std::string &name = plan.params[param];
  if (plan.paramTypes.size() != plan.params.size())
    return fail("the plan records no shard types (compiled by an older Partita? compile again)");
  const TensorType &shard = plan.paramTypes[param];
  std::vector<Tensor> parts;
  std::map<int64_t, std::pair<size_t, std::string>> firstCopy; // tp coordinate -> its part and file
  for (const RankPlan &r : plan.ranks) {
    if (!plan.paramStages.empty() &&
        (!r.coords.count(mesh_axis::kPipeline) || r.coords.at(mesh_axis::kPipeline) != plan.paramStages[param] % plan.stages()))
      continue; // another pipeline stage's rank: it does not hold the parameter
    int64_t tp = r.coords.count(mesh_axis::kTensor) ? r.coords.at(mesh_axis::kTensor) : 0;
    llvm::SmallString<256> path(mergeTrained);
    llvm::sys::path::append(path, "rank" + std::to_string(r.rank), name + ".npy");
    auto t = rt::readNpy(path);
    if (!t)
      return t.takeError();
    if (t->type() != shard)
      return fail(path + ": holds " + t->type().str() + ", but parameter '" + name + "' has " + shard.str() +
                  " shards in the plan");
    auto first = firstCopy.find(tp);
    if (first == firstCopy.end()) {
      firstCopy[tp] = {parts.size(), path.str().str()};
      parts.push_back(std::move(*t));
    } else if (std::memcmp(t->data(), parts[first->second.first].data(), t->byteSize()) != 0) {
      return fail(path + " and " + first->second.second + " hold different values of parameter '" + name +
                  "', though data-parallel replicas step in lockstep: the trained folder mixes runs or a file "
                  "was changed");
    }
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

/// One parameter, whole, from a checkpoint's float32 weights (launch --save):
/// read in its initializer's terms, as the checkpoint keeps it.
static llvm::Expected<Tensor> fromCheckpoint(const rt::SavedCheckpoint &saved, const Plan &plan, size_t param) {
  const ParamTarget &target = plan.paramTargets[param].front();
  std::string name = plan.params[param];
  Shape whole = target.shape;
  rt::StateBox box = rt::StateBox::whole({}, Shape(whole.size(), 0), whole);
  rt::placeInInitializer(target, name, whole, box);
  auto bytes = std::make_shared<std::vector<uint8_t>>(static_cast<size_t>(numElements(target.shape)) * sizeof(float));
  rt::CpuDevice host; // the tensor is host memory
  rt::StateTensor t{name, rt::StateKind::Weight, rt::TensorView{DType::F32, target.shape, bytes->data()}, &host, whole, box, false};
  if (auto err = saved.load(t, host))
    return std::move(err);
  return Tensor(DType::F32, target.shape, std::move(bytes));
}

/// The parameter a repeated target's copies stand for (`repeat` = [dim,
/// block, times]: each run of `times` blocks along dim holds one block's
/// copies): the first copy of each run, once every copy equals it bit for bit
/// (they step in lockstep, their gradients summed).
static llvm::Expected<Tensor> oneCopy(const Tensor &all, const std::vector<int64_t> &repeat, llvm::StringRef name) {
  size_t d = static_cast<size_t>(repeat[0]);
  int64_t block = repeat[1], times = repeat[2], outer = 1, inner = 1;
  const Shape &shape = all.shape();
  for (size_t i = 0; i < shape.size(); ++i)
    (i < d ? outer : inner) *= i == d ? 1 : shape[i];
  int64_t width = shape[d], runs = width / (block * times);
  Shape kept = shape;
  kept[d] = runs * block;
  size_t es = dtypeSize(all.dtype()), piece = static_cast<size_t>(block * inner) * es;
  auto bytes = std::make_shared<std::vector<uint8_t>>(static_cast<size_t>(numElements(kept)) * es);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t r = 0; r < runs; ++r) {
      const uint8_t *first = all.data() + static_cast<size_t>((o * width + r * block * times) * inner) * es;
      for (int64_t c = 1; c < times; ++c)
        if (std::memcmp(first, first + c * piece, piece) != 0)
          return fail("parameter '" + name + "': copies " + llvm::Twine(r * times) + " and " +
                      llvm::Twine(r * times + c) + " of one kv head differ, though they step in lockstep: the "
                      "trained folder mixes runs or a file was changed");
      std::memcpy(bytes->data() + static_cast<size_t>((o * runs + r) * block * inner) * es, first, piece);
    }
  return Tensor(all.dtype(), kept, std::move(bytes));
}

/// Writes `trained` into the initializer's bytes where target `t` says: the
/// box at t.start of transpose(stored, t.perm). Only the box is touched.
static llvm::Error writeTarget(std::vector<uint8_t> &bytes, DType dtype, const Shape &stored, const Tensor &trained,
                               const ParamTarget &t) {
  size_t rank = stored.size();
  const Shape &size = trained.shape();
  Shape start = t.start.empty() ? Shape(rank, 0) : t.start;
  bool fits = trained.dtype() == dtype && size.size() == rank && start.size() == rank &&
              (t.perm.empty() || t.perm.size() == rank);
  Shape storedStart(rank, 0), storedSize(rank, 0);
  std::vector<int64_t> inverse(rank);
  for (size_t d = 0; fits && d < rank; ++d) {
    int64_t s = t.perm.empty() ? static_cast<int64_t>(d) : t.perm[d]; // logical dim d is stored dim s
    fits = s >= 0 && s < static_cast<int64_t>(rank) && start[d] >= 0 && start[d] + size[d] <= stored[s];
    if (fits) {
      storedStart[s] = start[d];
      storedSize[s] = size[d];
      inverse[s] = static_cast<int64_t>(d);
    }
  }
  if (!fits)
    return fail("the box does not fit");
  Tensor box = t.perm.empty() ? trained : transposeTensor(trained, inverse); // in the stored order
  size_t es = dtypeSize(dtype);
  return forEachBoxRun(stored, storedStart, storedSize, [&](int64_t boxFirst, int64_t first, int64_t n) -> llvm::Error {
    std::memcpy(bytes.data() + first * es, box.data() + boxFirst * es, n * es);
    return llvm::Error::success();
  });
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

/// Output models at or under this many bytes of initializers (and inputs
/// without external data) stay one self-contained .onnx file.
static constexpr uint64_t kExternalDataThreshold = 1ULL << 30;
/// With external data, smaller tensors stay inline (onnx.save_model's default).
static constexpr uint64_t kInlineTensorBytes = 1024;

static bool isExternal(const onnx::TensorProto &t) { return t.data_location() == onnx::TensorProto::EXTERNAL; }

/// The bytes of an initializer's data, from its type (0 for a type Partita does not read).
static uint64_t dataBytes(const onnx::TensorProto &t) {
  auto dtype = dtypeFromOnnx(t.data_type());
  return static_cast<uint64_t>(numElements(Shape(t.dims().begin(), t.dims().end()))) * (dtype ? dtypeSize(*dtype) : 0);
}

/// An initializer's bytes: inline, or read from the input's external data.
static llvm::Expected<Tensor> readInitializer(const onnx::TensorProto &t, llvm::StringRef modelDir) {
  if (!isExternal(t))
    return tensorFromOnnx(t);
  auto dtype = dtypeFromOnnx(t.data_type());
  if (!dtype)
    return fail("initializer '" + t.name() + "' has element type " + onnxDTypeName(t.data_type()));
  WeightRef ref;
  ref.type = TensorType{*dtype, Shape(t.dims().begin(), t.dims().end()), true};
  uint64_t expected = static_cast<uint64_t>(ref.type.numel()) * dtypeSize(*dtype);
  std::string location;
  for (const auto &kv : t.external_data()) {
    uint64_t *field = kv.key() == "offset" ? &ref.offset : kv.key() == "length" ? &ref.length : nullptr;
    if (kv.key() == "location")
      location = kv.value();
    else if (field && llvm::StringRef(kv.value()).getAsInteger(10, *field))
      return fail("initializer '" + t.name() + "' has external data " + kv.key() + " '" + kv.value() +
                  "', not a byte count");
  }
  if (location.empty() || llvm::sys::path::is_absolute(location) || llvm::StringRef(location).contains(".."))
    return fail("initializer '" + t.name() + "' has external data outside the model folder: '" + location + "'");
  if (!ref.length)
    ref.length = expected;
  if (ref.length != expected)
    return fail("initializer '" + t.name() + "' external length " + llvm::Twine(ref.length) +
                " differs from its type's " + llvm::Twine(expected) + " bytes");
  llvm::SmallString<256> file(modelDir);
  llvm::sys::path::append(file, location);
  ref.file = file.str().str();
  WeightStore one;
  one.add(t.name(), ref);
  return one.load(t.name());
}

/// The merged model and its external data, written through temporary files
/// beside their targets and moved into place together at the end: a failure
/// leaves no half-written file and an earlier merge's output as it was.
class MergedFiles {
public:
  MergedFiles(std::string out, std::vector<std::string> inputs) : out_(std::move(out)), inputs_(std::move(inputs)) {}

  std::string dataPath() const { return out_ + ".data"; }
  /// The location a tensor in the merged model gives its external data.
  std::string dataLocation() const { return llvm::sys::path::filename(out_).str() + ".data"; }

  /// Refuses targets Partita may not replace: an input (the model or its
  /// external data), a folder, a file no merge wrote; OUT.data only together
  /// with the merged model OUT an earlier merge wrote beside it.
  llvm::Error check(bool external) const {
    std::string out = canonicalPath(out_);
    for (const std::string &in : inputs_)
      for (const std::string &target : external ? std::vector<std::string>{out, canonicalPath(dataPath())}
                                                : std::vector<std::string>{out})
        if (target == canonicalPath(in) || llvm::sys::fs::equivalent(target, in)) // the same path, or a hard link
          return fail("-o " + out_ + (target == out ? " is the input model" : ".data is the input's external data") +
                      ": choose another file");
    bool earlierMerge = false;
    if (llvm::sys::fs::exists(out)) {
      if (llvm::sys::fs::is_directory(out))
        return fail("-o " + out_ + " is a folder: give the merged model's file name");
      if (!writtenByMerge(out))
        return fail("-o " + out_ + " exists and was not written by partita merge: Partita does not overwrite it");
      earlierMerge = true;
    }
    if (external && llvm::sys::fs::exists(dataPath()) && !earlierMerge)
      return fail("-o " + out_ + ": " + dataPath() +
                  " exists without a merged model beside it (not written by partita merge): Partita does not "
                  "overwrite it");
    if (external && llvm::sys::fs::is_directory(dataPath()))
      return fail("-o " + out_ + ": " + dataPath() + " is a folder");
    return llvm::Error::success();
  }

  /// Opens the temporary external data file.
  llvm::Error openData() {
    auto file = OutputFile::create(dataPath(), OutputFile::Mode::Replace);
    if (!file)
      return file.takeError();
    data_.emplace(std::move(*file));
    return llvm::Error::success();
  }

  /// Moves `t`'s bytes to the end of the external data file.
  llvm::Error append(onnx::TensorProto &t, const Tensor &bytes) {
    uint64_t offset = data_->os().tell();
    data_->os().write(reinterpret_cast<const char *>(bytes.data()), bytes.byteSize());
    if (auto err = data_->checkWrites())
      return err;
    clearData(t);
    t.set_data_location(onnx::TensorProto::EXTERNAL);
    auto entry = [&](const char *key, const std::string &value) {
      auto *e = t.add_external_data();
      e->set_key(key);
      e->set_value(value);
    };
    entry("location", dataLocation());
    entry("offset", std::to_string(offset));
    entry("length", std::to_string(bytes.byteSize()));
    return llvm::Error::success();
  }

  /// Writes the model, then moves the data file and the model into place.
  llvm::Error commit(const onnx::ModelProto &model) {
    if (model.ByteSizeLong() > static_cast<size_t>(INT_MAX))
      return fail(out_ + ": the merged model would be a protobuf of " + llvm::Twine(model.ByteSizeLong()) +
                  " bytes, over the 2 GB limit");
    if (data_)
      if (auto err = data_->close())
        return err;
    auto file = OutputFile::create(out_, OutputFile::Mode::Replace);
    if (!file)
      return file.takeError();
    if (auto err = writeMessage(*file, model)) // streams: no second copy of the model in memory
      return err;
    if (auto err = file->close())
      return err;
    // Both written: now both into place, the data first (the model refers to it).
    if (data_)
      if (auto err = data_->commit())
        return err;
    return file->commit();
  }

  static void clearData(onnx::TensorProto &t) {
    t.clear_raw_data();
    t.clear_float_data();
    t.clear_double_data();
    t.clear_int32_data();
    t.clear_int64_data();
    t.clear_uint64_data();
    t.clear_external_data();
    t.clear_data_location();
  }

private:
  std::string out_;
  std::vector<std::string> inputs_;
  std::optional<OutputFile> data_;
};

static llvm::Error merge() {
  llvm::SmallString<256> planPath(mergePlan);
  llvm::sys::path::append(planPath, "plan.json");
  auto plan = readPlan(planPath);
  if (!plan)
    return plan.takeError();
  if (plan->params.empty())
    return fail(planPath + ": not a training plan (compile with --train)");
  if (plan->paramTargets.size() != plan->params.size())
    return fail(planPath + ": records no param_targets (compiled by an older Partita? compile again)");
  // A checkpoint (launch --save) instead of a launch's trained shards.
  std::optional<rt::SavedCheckpoint> checkpoint;
  if (isCheckpointFolder(mergeTrained)) {
    auto folder = rt::resolveCheckpoint(mergeTrained);
    if (!folder)
      return folder.takeError();
    auto saved = rt::SavedCheckpoint::open(*folder);
    if (!saved)
      return saved.takeError();
    checkpoint.emplace(std::move(*saved));
  }
  uint64_t modelSize = 0;
  if (!llvm::sys::fs::file_size(mergeModel, modelSize) && modelSize > static_cast<uint64_t>(INT_MAX))
    return fail(mergeModel + ": " + llvm::Twine(modelSize) +
                " bytes, over protobuf's 2 GB limit: save the weights as ONNX external data "
                "(onnx.save_model(m, path, save_as_external_data=True))");
  auto buf = llvm::MemoryBuffer::getFile(mergeModel);
  onnx::ModelProto model;
  if (!buf || !model.ParseFromArray((*buf)->getBufferStart(), static_cast<int>((*buf)->getBufferSize())))
    return fail(mergeModel + ": cannot read the model");
  buf->reset(); // the parsed model holds what it needs

  // Where each parameter goes, by initializer; and whether the output keeps external data.
  std::map<std::string, std::vector<std::pair<size_t, const ParamTarget *>>> targets;
  for (size_t i = 0; i < plan->params.size(); ++i)
    if (!isSharedWeightCopy(*plan, plan->params[i])) // a stage's copy equals the weight it copies
      for (const ParamTarget &t : plan->paramTargets[i])
        targets[t.initializer].push_back({i, &t});
  std::string modelDir = llvm::sys::path::parent_path(mergeModel).str();
  std::vector<std::string> inputs = {mergeModel};
  bool external = false;
  uint64_t total = 0;
  std::map<std::string, bool> present;
  for (const auto &t : model.graph().initializer()) {
    present[t.name()] = true;
    total += dataBytes(t);
    if (!isExternal(t))
      continue;
    external = true;
    for (const auto &kv : t.external_data())
      if (kv.key() == "location") {
        llvm::SmallString<256> file(modelDir);
        llvm::sys::path::append(file, kv.value());
        inputs.push_back(file.str().str());
      }
  }
  for (const auto &[init, uses] : targets)
    if (!present.count(init))
      return fail("parameter '" + plan->params[uses[0].first] + "': the model has no initializer '" + init + "'");
  external = external || total > kExternalDataThreshold;
  MergedFiles files(mergeOut, inputs);
  if (auto err = files.check(external))
    return err;
  if (external)
    if (auto err = files.openData())
      return err;

  // One initializer at a time: read it, write the parameters that target it, pass it on.
  for (auto &init : *model.mutable_graph()->mutable_initializer()) {
    auto uses = targets.find(init.name());
    bool trained = uses != targets.end();
    bool inlineAsIs = !isExternal(init) && (!external || dataBytes(init) < kInlineTensorBytes);
    if (!trained && inlineAsIs)
      continue; // untouched: the input's proto as it was
    auto current = readInitializer(init, modelDir);
    if (!current)
      return fail(mergeModel + ": " + llvm::toString(current.takeError()));
    Tensor value = *current;
    if (trained) {
      std::vector<uint8_t> bytes(value.data(), value.data() + value.byteSize());
      for (auto [param, target] : uses->second) {
        const std::string &name = plan->params[param];
        auto shards = checkpoint ? fromCheckpoint(*checkpoint, *plan, param)
                                 : gatherShards(*plan, param, plan->paramTargets[param][0].shape);
        if (shards && !target->repeat.empty())
          shards = oneCopy(*shards, target->repeat, name);
        if (!shards)
          return shards.takeError();
        if (auto err = writeTarget(bytes, value.dtype(), value.shape(), *shards, *target))
          return fail("parameter '" + name + "' (" + shards->type().str() + ") does not fit initializer '" +
                      init.name() + "' (" + value.type().str() + "): " + llvm::toString(std::move(err)));
      }
      value = Tensor(value.dtype(), value.shape(),
                     std::make_shared<const std::vector<uint8_t>>(std::move(bytes)));
    }
    if (external && value.byteSize() >= kInlineTensorBytes) {
      if (auto err = files.append(init, value))
        return err;
      continue;
    }
    MergedFiles::clearData(init);
    init.set_raw_data(std::string(reinterpret_cast<const char *>(value.data()), value.byteSize()));
  }

  onnx::StringStringEntryProto *mark = nullptr; // what lets a later merge replace this file
  for (auto &entry : *model.mutable_metadata_props())
    if (entry.key() == kMergeMark)
      mark = &entry;
  if (!mark)
    mark = model.add_metadata_props();
  mark->set_key(kMergeMark);
  mark->set_value(mergeModel);
  if (auto err = files.commit(model))
    return err;
  llvm::outs() << "partita: merged "
               << llvm::count_if(plan->params, [&](const std::string &n) { return !isSharedWeightCopy(*plan, n); })
               << " trained parameters from "
               << (checkpoint ? "checkpoint " + checkpoint->folder() : std::to_string(plan->worldSize()) + " rank(s)")
               << " into " << mergeOut << (external ? " (external data: " + files.dataPath() + ")" : "")
               << "\n";
  return llvm::Error::success();
}

int mergeMain() {
  if (auto err = merge())
    return reportError("partita merge", std::move(err));
  return 0;
}

} // namespace partita
