//===- CheckpointReader.cpp - reading a checkpoint back -------------------===//
//
// Each rank reads the index, then for every piece of its state reads the
// saved pieces that overlap it (whatever layout saved them), checks each
// one's hash, and copies the overlap (copyOverlap). A piece the saved pieces
// do not cover whole is an error naming it, as is a tensor the checkpoint
// lacks or holds in another shape: the model differs.
//===----------------------------------------------------------------------===//
#include "runtime/checkpoint/SavedCheckpoint.h"
#include "runtime/checkpoint/CheckpointFiles.h"
#include "runtime/core/HalfConvert.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/xxhash.h"
#include <algorithm>
#include <future>
#include <set>
#include <thread>

namespace partita::rt {

static llvm::Error fail(const llvm::Twine &msg) { return llvm::createStringError(llvm::inconvertibleErrorCode(), msg); }

static bool readShape(const llvm::json::Object &o, llvm::StringRef key, Shape &out) {
  const llvm::json::Array *a = o.getArray(key);
  if (!a)
    return false;
  out.clear();
  for (const llvm::json::Value &v : *a) {
    auto x = v.getAsInteger();
    if (!x)
      return false;
    out.push_back(*x);
  }
  return true;
}

/// The extent of each dimension of the view of `whole` that `outer` gives.
static Shape viewShape(const Shape &whole, const Shape &outer) {
  Shape v;
  for (size_t d = 0; d < whole.size(); ++d) {
    int64_t o = d < outer.size() ? outer[d] : 1;
    if (o > 1)
      v.push_back(o);
    v.push_back(o > 1 ? whole[d] / o : whole[d]);
  }
  return v;
}

llvm::Expected<SavedCheckpoint> SavedCheckpoint::open(llvm::StringRef folder) {
  SavedCheckpoint c;
  c.folder_ = folder.str();
  llvm::SmallString<256> p(folder);
  llvm::sys::path::append(p, kCheckpointIndex);
  c.indexPath_ = std::string(p);
  const std::string &path = c.indexPath_;
  auto buf = llvm::MemoryBuffer::getFile(path);
  if (!buf)
    return fail(path + ": " + buf.getError().message());
  auto parsed = llvm::json::parse((*buf)->getBuffer());
  if (!parsed)
    return fail(path + ": not JSON: " + llvm::toString(parsed.takeError()));
  llvm::json::Object *root = parsed->getAsObject();
  if (!root || root->getString("format") != llvm::StringRef(kCheckpointFormat))
    return fail(path + ": not a " + kCheckpointFormat + " index");
  TrainProgress &pr = c.progress_;
  for (auto [key, out] : {std::pair<const char *, int64_t *>{"step", &pr.step},
                          {"updates", &pr.updates},
                          {"skipped", &pr.skipped},
                          {"samples", &pr.samples},
                          {"seed", &pr.seed}}) {
    auto v = root->getInteger(key);
    if (!v)
      return fail(path + ": the progress lacks '" + key + "'");
    *out = *v;
  }
  if (const llvm::json::Object *s = root->getObject("loss_scaler")) {
    LossScalerState ls;
    auto scale = s->getNumber("scale");
    auto left = s->getInteger("hysteresis_left"), it = s->getInteger("iteration"), last = s->getInteger("last_overflow");
    if (!scale || !left || !it || !last)
      return fail(path + ": the loss scaler's record is incomplete");
    ls.scale = *scale;
    ls.hysteresisLeft = static_cast<int>(*left);
    ls.iteration = *it;
    ls.lastOverflow = *last;
    c.scaler_ = ls;
  }
  if (const llvm::json::Object *l = root->getObject("layout"))
    c.layout_ = *l;
  if (const llvm::json::Object *d = root->getObject("data"))
    c.data_ = *d;
  const llvm::json::Array *tensors = root->getArray("tensors");
  if (!tensors)
    return fail(path + ": no tensors");
  for (const llvm::json::Value &tv : *tensors) {
    const llvm::json::Object *t = tv.getAsObject();
    auto name = t ? t->getString("name") : llvm::None, kind = t ? t->getString("kind") : llvm::None,
         dtype = t ? t->getString("dtype") : llvm::None;
    Tensor s;
    std::optional<DType> dt = dtype ? parseDType(*dtype) : std::nullopt;
    if (!name || !kind || !dt || !readShape(*t, "shape", s.shape) || !t->getArray("pieces"))
      return fail(path + ": a tensor entry lacks its name, kind, dtype, shape or pieces");
    if (llvm::any_of(s.shape, [](int64_t n) { return n < 0 || n > (int64_t{1} << 40); }))
      return fail(path + ": tensor '" + *name + "' has the shape " + shapeString(s.shape));
    s.name = name->str();
    s.kind = kind->str();
    s.dtype = *dt;
    for (const llvm::json::Value &pv : *t->getArray("pieces")) {
      const llvm::json::Object *o = pv.getAsObject();
      Piece piece;
      Shape flat;
      auto file = o ? o->getString("file") : llvm::None, hash = o ? o->getString("xxh64") : llvm::None;
      auto offset = o ? o->getInteger("offset") : llvm::None;
      bool ok = file && hash && offset && *offset >= 0 && readShape(*o, "outer", piece.box.outer) &&
                readShape(*o, "start", piece.box.start) && readShape(*o, "extent", piece.box.extent) &&
                readShape(*o, "flat", flat) && flat.size() == 2 && !hash->getAsInteger(16, piece.hash) &&
                !llvm::sys::path::has_parent_path(*file) && !file->startswith(".");
      // The box lies in the whole tensor's view; the flat range in the box.
      Shape view = ok ? viewShape(s.shape, piece.box.outer) : Shape{};
      for (size_t d = 0; ok && d < piece.box.outer.size() && d < s.shape.size(); ++d)
        ok = piece.box.outer[d] >= 1 && s.shape[d] % piece.box.outer[d] == 0;
      ok = ok && (piece.box.outer.empty() || piece.box.outer.size() == s.shape.size()) &&
           piece.box.start.size() == view.size() && piece.box.extent.size() == view.size();
      for (size_t d = 0; ok && d < view.size(); ++d)
        ok = piece.box.start[d] >= 0 && piece.box.extent[d] >= 0 && piece.box.start[d] + piece.box.extent[d] <= view[d];
      if (ok) {
        piece.box.flatBegin = flat[0];
        piece.box.flatEnd = flat[1];
        ok = flat[0] >= 0 && flat[0] <= flat[1] && flat[1] <= piece.box.boxNumel();
      }
      if (!ok)
        return fail(path + ": a piece of '" + s.name + "' (" + s.kind + ") is malformed or outside " +
                    shapeString(s.shape));
      llvm::SmallString<256> f(folder);
      llvm::sys::path::append(f, *file);
      piece.file = std::string(f);
      piece.offset = static_cast<uint64_t>(*offset);
      s.pieces.push_back(std::move(piece));
    }
    c.byName_[{s.name, s.kind}] = c.tensors_.size();
    c.tensors_.push_back(std::move(s));
  }
  return c;
}

const SavedCheckpoint::Tensor *SavedCheckpoint::find(llvm::StringRef name, llvm::StringRef kind) const {
  auto it = byName_.find({name.str(), kind.str()});
  return it == byName_.end() ? nullptr : &tensors_[it->second];
}

std::map<std::string, uint64_t> SavedCheckpoint::files() const {
  std::map<std::string, uint64_t> out;
  for (const Tensor &t : tensors_)
    for (const Piece &p : t.pieces) {
      uint64_t end = p.offset + static_cast<uint64_t>(p.box.numel()) * dtypeSize(t.dtype);
      out[p.file] = std::max(out[p.file], end);
    }
  return out;
}

/// A piece's bytes, read and checked against its hash.
static llvm::Error readPiece(const SavedCheckpoint::Tensor &t, const SavedCheckpoint::Piece &p,
                             std::vector<uint8_t> &bytes) {
  bytes.resize(static_cast<size_t>(p.box.numel()) * dtypeSize(t.dtype));
  if (auto err = readAt(p.file, p.offset, bytes.data(), bytes.size()))
    return err;
  if (llvm::xxHash64(llvm::ArrayRef<uint8_t>(bytes)) != p.hash)
    return fail(p.file + ": the bytes of a piece of '" + t.name + "' (" + t.kind + ") at offset " +
                llvm::Twine(p.offset) + " do not match their hash: the file is corrupt");
  return llvm::Error::success();
}

llvm::Error SavedCheckpoint::fill(const Tensor &saved, const StateTensor &want, void *dst) const {
  const size_t elem = dtypeSize(saved.dtype);
  int64_t filled = 0;
  std::vector<uint8_t> bytes;
  for (const Piece &p : saved.pieces) {
    if (copyOverlap(nullptr, p.box, nullptr, want.box, want.whole, 0) == 0)
      continue;
    if (auto err = readPiece(saved, p, bytes))
      return err;
    filled += copyOverlap(bytes.data(), p.box, dst, want.box, want.whole, elem);
  }
  if (filled != want.box.numel())
    return fail(indexPath_ + " holds " + llvm::Twine(filled) + " of the " + llvm::Twine(want.box.numel()) +
                " elements of '" + saved.name + "' (" + saved.kind + ") this rank needs: its pieces do not cover them");
  return llvm::Error::success();
}

/// The saved tensor a state tensor reads: mixed precision's half weight is
/// the saved float32 weight, rounded.
static const char *savedKind(StateKind kind) {
  return stateKindName(kind == StateKind::HalfWeight ? StateKind::Weight : kind);
}

llvm::Expected<const SavedCheckpoint::Tensor *> SavedCheckpoint::matching(const StateTensor &t,
                                                                           llvm::StringRef kind) const {
  const Tensor *saved = find(t.name, kind);
  if (!saved)
    return fail(indexPath_ + " has no " + kind + " of '" + t.name + "', which this plan trains: it is of another model");
  if (saved->shape != t.whole)
    return fail(indexPath_ + " holds " + kind + " of '" + t.name + "' as " + shapeString(saved->shape) +
                ", this plan's is " + shapeString(t.whole) + ": it is of another model or another form of it");
  return saved;
}

llvm::Error SavedCheckpoint::load(const StateTensor &t, Device &device) const {
  llvm::StringRef kind = savedKind(t.kind);
  auto found = matching(t, kind);
  if (!found)
    return found.takeError();
  const Tensor *saved = *found;
  // Filled in host memory, then copied to the device (in place on one sharing host memory).
  std::vector<uint8_t> staging;
  void *host = t.view.data;
  if (!device.sharesHostMemory()) {
    staging.resize(t.view.bytes());
    host = staging.data();
  }
  auto toDevice = [&] {
    if (host != t.view.data)
      device.copyFromHost(t.view.data, host, staging.size());
  };
  if (saved->dtype == t.view.dtype) {
    if (auto err = fill(*saved, t, host))
      return err;
    toDevice();
    return llvm::Error::success();
  }
  bool half = t.view.dtype == DType::BF16 || t.view.dtype == DType::F16;
  if (saved->dtype != DType::F32 || !half)
    return fail(indexPath_ + " holds " + kind + " of '" + t.name + "' in " + dtypeName(saved->dtype) +
                ", which does not convert to this plan's " + dtypeName(t.view.dtype));
  std::vector<float> wide(static_cast<size_t>(t.box.numel()));
  if (auto err = fill(*saved, t, wide.data()))
    return err;
  roundToHalfRow(t.view.dtype, wide.data(), static_cast<uint16_t *>(host), 0, t.box.numel());
  toDevice();
  return llvm::Error::success();
}

llvm::Error SavedCheckpoint::checkPlan(const Plan &plan) const {
  // What the plan trains: each parameter's weight and moments, whole shards
  // (the names and shapes do not depend on the rank).
  CpuDevice none; // no tensor is read or written
  TrainState want(plan, plan.ranks.empty() ? std::map<std::string, int64_t>{} : plan.ranks[0].coords, none);
  for (size_t i = 0; i < plan.params.size() && i < plan.paramTypes.size(); ++i)
    for (StateKind kind : {StateKind::Weight, StateKind::Moment1, StateKind::Moment2})
      if (auto err = want.add(i, kind, TensorView{plan.paramTypes[i].dtype, plan.paramTypes[i].shape, nullptr}))
        return err;
  std::set<std::pair<std::string, std::string>> seen;
  for (const StateTensor &t : want.tensors()) {
    llvm::StringRef kind = savedKind(t.kind);
    if (!seen.insert({t.name, kind.str()}).second)
      continue;
    auto found = matching(t, kind);
    if (!found)
      return found.takeError();
    const Tensor *saved = *found;
    std::vector<StateBox> boxes;
    for (const Piece &p : saved->pieces)
      boxes.push_back(p.box);
    if (!piecesTile(boxes, t.whole))
      return fail(indexPath_ + ": the pieces of '" + t.name + "' (" + kind + ") do not hold each element of " +
                  shapeString(t.whole) + " exactly once");
  }
  // Every file there and long enough, then every piece's bytes, a file per thread.
  std::vector<std::string> paths;
  for (const auto &[file, bytes] : files()) {
    uint64_t size = 0;
    if (auto ec = llvm::sys::fs::file_size(file, size))
      return fail(file + ": " + ec.message() + " (a rank's shard file of " + indexPath_ + ")");
    if (size < bytes)
      return fail(file + ": " + llvm::Twine(size) + " bytes, its pieces need " + llvm::Twine(bytes) +
                  ": the file is truncated");
    paths.push_back(file);
  }
  std::map<std::string, std::vector<std::pair<const Tensor *, const Piece *>>> byFile;
  for (const Tensor &t : tensors_)
    for (const Piece &p : t.pieces)
      byFile[p.file].push_back({&t, &p});
  size_t threads = std::max(1u, std::min(8u, std::thread::hardware_concurrency()));
  for (size_t first = 0; first < paths.size(); first += threads) {
    std::vector<std::future<std::string>> checks;
    for (size_t f = first; f < std::min(paths.size(), first + threads); ++f)
      checks.push_back(std::async(std::launch::async, [&, f] {
        std::vector<uint8_t> bytes;
        for (auto [t, p] : byFile[paths[f]])
          if (llvm::Error err = readPiece(*t, *p, bytes))
            return llvm::toString(std::move(err));
        return std::string();
      }));
    std::string error;
    for (auto &c : checks) {
      std::string e = c.get();
      if (error.empty())
        error = e;
    }
    if (!error.empty())
      return fail(error);
  }
  return llvm::Error::success();
}

llvm::Error SavedCheckpoint::checkRun(int64_t seed, const CheckpointRun &run) const {
  if (progress_.seed != seed)
    return fail(indexPath_ + " was trained with --seed " + llvm::Twine(progress_.seed) + ", this run has --seed " +
                llvm::Twine(seed) + ": the sampler would draw other sequences (give --seed " +
                llvm::Twine(progress_.seed) + ")");
  int64_t tokens = data_.getInteger("tokens").getValueOr(run.tokens);
  if (tokens != run.tokens)
    return fail(indexPath_ + " was trained on " + llvm::Twine(tokens) + " tokens (" +
                data_.getString("path").getValueOr("?") + "), --data " + run.data + " holds " +
                llvm::Twine(run.tokens) + ": the sampler's position means nothing in other data");
  return llvm::Error::success();
}

llvm::Error loadCheckpoint(TrainState &state, llvm::StringRef folder, const CheckpointRun &run) {
  auto c = SavedCheckpoint::open(folder);
  if (!c)
    return c.takeError();
  if (auto err = c->checkRun(state.progress.seed, run))
    return err;
  state.progress = c->progress();
  if (state.scaler && c->lossScaler())
    state.scaler->restore(*c->lossScaler());
  for (const StateTensor &t : state.tensors())
    if (auto err = c->load(t, *t.device))
      return err;
  return llvm::Error::success();
}

} // namespace partita::rt
