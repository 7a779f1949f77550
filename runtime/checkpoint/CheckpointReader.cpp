//===- CheckpointReader.cpp - resuming from a checkpoint ------------------===//
//
// Each rank reads the index, then for every tensor piece of its state reads
// the saved pieces that overlap it (whatever layout saved them), checks each
// one's hash, and copies the overlap (copyOverlap). A piece the saved pieces
// do not cover whole is an error naming it, as is a tensor the checkpoint
// lacks or holds in another shape: the model differs.
//===----------------------------------------------------------------------===//
#include "runtime/checkpoint/Checkpoint.h"
#include "runtime/checkpoint/CheckpointFiles.h"
#include "runtime/core/HalfConvert.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/xxhash.h"
#include <map>

namespace partita::rt {

static llvm::Error fail(const llvm::Twine &msg) { return llvm::createStringError(llvm::inconvertibleErrorCode(), msg); }

namespace {

struct SavedPiece {
  std::string file;
  uint64_t offset = 0, hash = 0;
  StateBox box;
};

struct SavedTensor {
  DType dtype;
  Shape shape;
  std::vector<SavedPiece> pieces;
};

bool readShape(const llvm::json::Object &o, llvm::StringRef key, Shape &out) {
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

class Index {
public:
  static llvm::Expected<Index> read(llvm::StringRef folder);
  const llvm::json::Object &root() const { return *root_.getAsObject(); }
  const SavedTensor *find(const std::string &name, llvm::StringRef kind) const {
    auto it = tensors_.find({name, kind.str()});
    return it == tensors_.end() ? nullptr : &it->second;
  }
  std::string path;

private:
  llvm::json::Value root_ = nullptr;
  std::map<std::pair<std::string, std::string>, SavedTensor> tensors_;
};

llvm::Expected<Index> Index::read(llvm::StringRef folder) {
  Index ix;
  llvm::SmallString<256> p(folder);
  llvm::sys::path::append(p, kCheckpointIndex);
  ix.path = std::string(p);
  auto buf = llvm::MemoryBuffer::getFile(ix.path);
  if (!buf)
    return fail(ix.path + ": " + buf.getError().message());
  auto parsed = llvm::json::parse((*buf)->getBuffer());
  if (!parsed)
    return fail(ix.path + ": not JSON: " + llvm::toString(parsed.takeError()));
  ix.root_ = std::move(*parsed);
  const llvm::json::Object *root = ix.root_.getAsObject();
  if (!root || root->getString("format") != llvm::StringRef(kCheckpointFormat))
    return fail(ix.path + ": not a " + kCheckpointFormat + " index");
  const llvm::json::Array *tensors = root->getArray("tensors");
  if (!tensors)
    return fail(ix.path + ": no tensors");
  for (const llvm::json::Value &tv : *tensors) {
    const llvm::json::Object *t = tv.getAsObject();
    auto name = t ? t->getString("name") : llvm::None, kind = t ? t->getString("kind") : llvm::None,
         dtype = t ? t->getString("dtype") : llvm::None;
    SavedTensor s;
    std::optional<DType> dt = dtype ? parseDType(*dtype) : std::nullopt;
    if (!name || !kind || !dt || !readShape(*t, "shape", s.shape) || !t->getArray("pieces"))
      return fail(ix.path + ": a tensor entry lacks its name, kind, dtype, shape or pieces");
    s.dtype = *dt;
    for (const llvm::json::Value &pv : *t->getArray("pieces")) {
      const llvm::json::Object *o = pv.getAsObject();
      SavedPiece piece;
      Shape flat;
      auto file = o ? o->getString("file") : llvm::None, hash = o ? o->getString("xxh64") : llvm::None;
      auto offset = o ? o->getInteger("offset") : llvm::None;
      if (!file || !hash || !offset || !readShape(*o, "outer", piece.box.outer) ||
          !readShape(*o, "start", piece.box.start) || !readShape(*o, "extent", piece.box.extent) ||
          !readShape(*o, "flat", flat) || flat.size() != 2 || hash->getAsInteger(16, piece.hash) ||
          llvm::sys::path::has_parent_path(*file))
        return fail(ix.path + ": a piece of '" + *name + "' (" + *kind + ") is malformed");
      llvm::SmallString<256> f(folder);
      llvm::sys::path::append(f, *file);
      piece.file = std::string(f);
      piece.offset = static_cast<uint64_t>(*offset);
      piece.box.flatBegin = flat[0];
      piece.box.flatEnd = flat[1];
      s.pieces.push_back(std::move(piece));
    }
    ix.tensors_[{name->str(), kind->str()}] = std::move(s);
  }
  return ix;
}

std::string shapeText(const Shape &s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i)
    out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

/// Fills `dst` (piece `want` of `name`'s `kind`, in `saved.dtype`) from the
/// saved pieces that overlap it.
llvm::Error fill(const SavedTensor &saved, const std::string &name, llvm::StringRef kind, const StateTensor &want,
                 void *dst) {
  const size_t elem = dtypeSize(saved.dtype);
  int64_t filled = 0;
  std::vector<uint8_t> bytes;
  for (const SavedPiece &p : saved.pieces) {
    if (copyOverlap(nullptr, p.box, nullptr, want.box, want.whole, 0) == 0)
      continue;
    bytes.resize(static_cast<size_t>(p.box.numel()) * elem);
    if (auto err = readAt(p.file, p.offset, bytes.data(), bytes.size()))
      return err;
    if (llvm::xxHash64(llvm::ArrayRef<uint8_t>(bytes)) != p.hash)
      return fail(p.file + ": the bytes of a piece of '" + name + "' (" + kind +
                  ") at offset " + llvm::Twine(p.offset) + " do not match their hash: the file is corrupt");
    filled += copyOverlap(bytes.data(), p.box, dst, want.box, want.whole, elem);
  }
  if (filled != want.box.numel())
    return fail("the checkpoint holds " + llvm::Twine(filled) + " of the " + llvm::Twine(want.box.numel()) +
                " elements of '" + name + "' (" + kind + ") this rank needs: its pieces do not cover them");
  return llvm::Error::success();
}

llvm::Error loadTensor(const Index &ix, const StateTensor &t) {
  // Mixed precision's half weight is the saved float32 weight, rounded.
  llvm::StringRef kind = stateKindName(t.kind == StateKind::HalfWeight ? StateKind::Weight : t.kind);
  const SavedTensor *saved = ix.find(t.name, kind);
  if (!saved)
    return fail(ix.path + " has no " + kind + " of parameter '" + t.name + "': it is of another model");
  if (saved->shape != t.whole)
    return fail(ix.path + " holds " + kind + " of parameter '" + t.name + "' as " + shapeText(saved->shape) +
                ", this plan's is " + shapeText(t.whole) + ": it is of another model or another form of it");
  if (saved->dtype == t.view.dtype)
    return fill(*saved, t.name, kind, t, t.view.data);
  bool half = t.view.dtype == DType::BF16 || t.view.dtype == DType::F16;
  if (saved->dtype != DType::F32 || !half)
    return fail(ix.path + " holds " + kind + " of parameter '" + t.name + "' in " + dtypeName(saved->dtype) +
                ", which does not convert to this plan's " + dtypeName(t.view.dtype));
  std::vector<float> wide(static_cast<size_t>(t.box.numel()));
  if (auto err = fill(*saved, t.name, kind, t, wide.data()))
    return err;
  roundToHalfRow(t.view.dtype, wide.data(), static_cast<uint16_t *>(t.view.data), 0, t.box.numel());
  return llvm::Error::success();
}

} // namespace

llvm::Expected<int64_t> checkpointStep(llvm::StringRef folder) {
  auto ix = Index::read(folder);
  if (!ix)
    return ix.takeError();
  auto step = ix->root().getInteger("step");
  if (!step)
    return fail(ix->path + ": no step");
  return *step;
}

llvm::Error loadCheckpoint(TrainState &state, llvm::StringRef folder, const CheckpointRun &run) {
  auto ix = Index::read(folder);
  if (!ix)
    return ix.takeError();
  const llvm::json::Object &root = ix->root();
  TrainProgress p;
  auto get = [&](const char *key, int64_t &out) {
    auto v = root.getInteger(key);
    if (v)
      out = *v;
    return v.hasValue();
  };
  if (!get("step", p.step) || !get("updates", p.updates) || !get("skipped", p.skipped) ||
      !get("samples", p.samples) || !get("seed", p.seed))
    return fail(ix->path + ": the progress (step, updates, skipped, samples, seed) is incomplete");
  if (p.seed != state.progress.seed)
    return fail(ix->path + " was trained with --seed " + llvm::Twine(p.seed) + ", this run has --seed " +
                llvm::Twine(state.progress.seed) + ": the sampler would draw other sequences (give --seed " +
                llvm::Twine(p.seed) + ")");
  if (const llvm::json::Object *data = root.getObject("data")) {
    int64_t tokens = data->getInteger("tokens").getValueOr(run.tokens);
    if (tokens != run.tokens)
      return fail(ix->path + " was trained on " + llvm::Twine(tokens) + " tokens (" +
                  data->getString("path").getValueOr("?") + "), --data " + run.data + " holds " +
                  llvm::Twine(run.tokens) + ": the sampler's position means nothing in other data");
  }
  state.progress = p;
  if (state.scaler)
    if (const llvm::json::Object *s = root.getObject("loss_scaler")) {
      LossScalerState ls;
      ls.scale = s->getNumber("scale").getValueOr(state.scaler->scale());
      ls.hysteresisLeft = static_cast<int>(s->getInteger("hysteresis_left").getValueOr(0));
      ls.iteration = s->getInteger("iteration").getValueOr(0);
      ls.lastOverflow = s->getInteger("last_overflow").getValueOr(-1);
      state.scaler->restore(ls);
    }
  for (const StateTensor &t : state.tensors())
    if (auto err = loadTensor(*ix, t))
      return err;
  return llvm::Error::success();
}

} // namespace partita::rt
