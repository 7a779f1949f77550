//===- WeightStore.cpp ----------------------------------------------------===//
#include "compiler/ir/WeightStore.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include <algorithm>
#include <cassert>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

namespace partita {

std::string absoluteWeightFile(llvm::StringRef file) {
  llvm::SmallString<256> path(file);
  llvm::sys::fs::make_absolute(path);
  llvm::sys::path::remove_dots(path, /*remove_dot_dot=*/true);
  return path.str().str();
}

WeightStore::WeightStore(const WeightStore &other) : base_(other.snapshot()) {}

WeightStore &WeightStore::operator=(const WeightStore &other) {
  if (this != &other) {
    base_ = other.snapshot();
    own_.clear();
    frozen_.reset();
  }
  return *this;
}

std::shared_ptr<const WeightStore::Table> WeightStore::snapshot() const {
  if (own_.empty())
    return base_;
  if (!frozen_) {
    auto merged = std::make_shared<Table>(base_ ? *base_ : Table());
    for (const auto &entry : own_)
      (*merged)[entry.getKey()] = entry.getValue();
    frozen_ = std::move(merged);
  }
  return frozen_;
}

void WeightStore::add(const std::string &name, WeightRef ref) {
  own_[name] = std::move(ref);
  frozen_.reset(); // a later copy sees this one too; earlier copies keep theirs
}

const WeightRef *WeightStore::find(llvm::StringRef name) const {
  if (auto it = own_.find(name); it != own_.end())
    return &it->second;
  if (base_)
    if (auto it = base_->find(name); it != base_->end())
      return &it->second;
  return nullptr;
}

std::string weightViewName(llvm::StringRef base, llvm::ArrayRef<int64_t> start, llvm::ArrayRef<int64_t> size) {
  std::string name = base.str() + "[";
  for (size_t d = 0; d < start.size(); ++d)
    name += (d ? "," : "") + std::to_string(start[d]) + ":" + std::to_string(start[d] + size[d]);
  return name + "]";
}

bool parseWeightViewName(llvm::StringRef name, std::string &base, Shape &start, Shape &size) {
  if (!name.endswith("]") || !name.contains('['))
    return false;
  size_t open = name.rfind('[');
  base = name.take_front(open).str();
  llvm::SmallVector<llvm::StringRef, 4> dims;
  name.drop_front(open + 1).drop_back().split(dims, ',');
  for (auto d : dims) {
    auto [a, b] = d.split(':');
    int64_t lo, hi;
    if (a.getAsInteger(10, lo) || b.getAsInteger(10, hi) || hi < lo)
      return false;
    start.push_back(lo);
    size.push_back(hi - lo);
  }
  return true;
}

WeightRef WeightRef::transposed(llvm::ArrayRef<int64_t> p) const {
  WeightRef t = *this;
  if (t.storedShape.empty())
    t.storedShape = type.shape;
  // Result dim i is this weight's dim p[i]: stored dim perm[p[i]], and a view's box permutes with it.
  t.perm.clear();
  t.type.shape.clear();
  t.viewStart.clear();
  for (int64_t d : p) {
    t.perm.push_back(perm.empty() ? d : perm[d]);
    t.type.shape.push_back(type.shape[d]);
    if (!viewStart.empty())
      t.viewStart.push_back(viewStart[d]);
  }
  return t;
}

WeightRef WeightRef::flattened(int64_t dim, int64_t blocks, int64_t length) const {
  WeightRef f = *this;
  f.flat = FlatPart{dim, blocks, length, 0, type.shape};
  f.type.shape = {blocks * length};
  return f;
}

WeightRef WeightRef::unflattened() const {
  WeightRef u = *this;
  if (flat) {
    u.type.shape = flat->shape;
    u.flat.reset();
  }
  return u;
}

WeightRef WeightRef::repeated(int64_t dim, int64_t block, int64_t times) const {
  WeightRef r = *this;
  r.repeat = Repeat{dim, block, times};
  r.type.shape[static_cast<size_t>(dim)] *= times;
  return r;
}

WeightRef WeightRef::view(llvm::ArrayRef<int64_t> start, llvm::ArrayRef<int64_t> size) const {
  if (repeat && !flat) { // inside one copy of a block: that block of the weight repeated
    const Repeat &rep = *repeat;
    size_t d = static_cast<size_t>(rep.dim);
    [[maybe_unused]] int64_t first = start[d], last = start[d] + size[d] - 1, run = rep.block * rep.times;
    WeightRef base = *this;
    base.repeat.reset();
    base.type.shape[d] /= rep.times;
    if (first % run == 0 && size[d] % run == 0) { // whole runs of copies: those blocks, repeated
      Shape at(start.begin(), start.end()), box(size.begin(), size.end());
      at[d] /= rep.times;
      box[d] /= rep.times;
      return base.view(at, box).repeated(rep.dim, rep.block, rep.times);
    }
    assert(first / rep.block == last / rep.block && "a view of a repeated weight spans two copies");
    Shape at(start.begin(), start.end());
    at[d] = first / (rep.block * rep.times) * rep.block + first % rep.block;
    return base.view(at, size);
  }
  WeightRef v = *this;
  if (v.flat) { // a range of the flat buffer
    v.flat->start += start.empty() ? 0 : start[0];
    v.type.shape.assign(size.begin(), size.end());
    const FlatPart &f = *v.flat;
    int64_t block = f.start / std::max<int64_t>(f.length, 1), count = size.empty() ? 1 : size[0];
    if (v.repeat && f.start + count <= (block + 1) * f.length) {
      // Inside one tensor-parallel block of a repeated weight (ZeRO-3's part
      // of a kv head's copy): a part of that block, a plain view.
      WeightRef whole = unflattened();
      Shape at(f.shape.size(), 0), box = f.shape;
      box[static_cast<size_t>(f.dim)] /= f.blocks;
      at[static_cast<size_t>(f.dim)] = block * box[static_cast<size_t>(f.dim)];
      WeightRef part = whole.view(at, box).flattened(f.dim, 1, f.length);
      part.flat->start = f.start - block * f.length;
      part.type.shape.assign(size.begin(), size.end());
      return part;
    }
    return v;
  }
  if (v.viewStart.empty()) {
    v.viewStart.assign(type.shape.size(), 0);
    if (v.storedShape.empty())
      v.storedShape = type.shape;
  }
  for (size_t d = 0; d < start.size(); ++d)
    v.viewStart[d] += start[d];
  v.type.shape.assign(size.begin(), size.end());
  return v;
}

llvm::Error forEachBoxRun(llvm::ArrayRef<int64_t> shape, llvm::ArrayRef<int64_t> start, llvm::ArrayRef<int64_t> size,
                          llvm::function_ref<llvm::Error(int64_t boxFirst, int64_t first, int64_t count)> visit) {
  int64_t rank = static_cast<int64_t>(shape.size());
  if (numElements(size) == 0)
    return llvm::Error::success();
  if (rank == 0)
    return visit(0, 0, 1);
  // Trailing dims the box spans whole are contiguous with the last partial one: one run.
  int64_t last = rank - 1, inner = 1;
  while (last > 0 && start[last] == 0 && size[last] == shape[last])
    inner *= shape[last--];
  std::vector<int64_t> strides(rank, 1);
  for (int64_t d = rank - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * shape[d + 1];
  int64_t runLen = size[last] * inner, runs = numElements(size.take_front(last));
  for (int64_t r = 0; r < runs; ++r) {
    int64_t rem = r, first = start[last] * strides[last];
    for (int64_t d = last - 1; d >= 0; --d) {
      first += (start[d] + rem % size[d]) * strides[d];
      rem /= size[d];
    }
    if (auto err = visit(r * runLen, first, runLen))
      return err;
  }
  return llvm::Error::success();
}

namespace {
/// Where a weight's stored bytes are: one open external data file (read with
/// pread, so only the bytes asked for) or a buffer in memory.
class StoredBytes {
public:
  StoredBytes(const WeightRef &ref, llvm::StringRef name) : ref_(ref), name_(name) {}
  ~StoredBytes() {
    if (fd_ >= 0)
      ::close(fd_);
  }
  StoredBytes(const StoredBytes &) = delete;
  StoredBytes &operator=(const StoredBytes &) = delete;

  llvm::Error open() {
    if (ref_.inlineBytes)
      return llvm::Error::success();
    fd_ = ::open(ref_.file.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0)
      return fail("cannot open external data file '" + ref_.file + "': " + std::strerror(errno));
    return llvm::Error::success();
  }

  /// Copies bytes [at, at + n) of the weight's stored bytes to `dst`.
  llvm::Error read(uint8_t *dst, uint64_t at, uint64_t n) {
    uint64_t have = ref_.inlineBytes ? ref_.inlineBytes->size() : ref_.length;
    if (at + n > have)
      return fail("bytes [" + llvm::Twine(at) + ", " + llvm::Twine(at + n) + ") lie past its " + llvm::Twine(have) +
                  " stored bytes");
    if (ref_.inlineBytes) {
      std::memcpy(dst, ref_.inlineBytes->data() + at, n);
      return llvm::Error::success();
    }
    uint64_t done = 0;
    while (done < n) {
      ssize_t got = ::pread(fd_, dst + done, n - done, static_cast<off_t>(ref_.offset + at + done));
      if (got < 0 && errno == EINTR)
        continue;
      if (got < 0)
        return fail("cannot read external data file '" + ref_.file + "': " + std::strerror(errno));
      if (got == 0)
        return fail("external data file '" + ref_.file + "' is truncated: it ends before byte " +
                    llvm::Twine(ref_.offset + at + n) + " (the weight is at offset " + llvm::Twine(ref_.offset) +
                    ", length " + llvm::Twine(ref_.length) + ")");
      done += static_cast<uint64_t>(got);
    }
    return llvm::Error::success();
  }

private:
  const WeightRef &ref_;
  llvm::StringRef name_;
  int fd_ = -1;

  llvm::Error fail(const llvm::Twine &msg) const {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "weight '" + name_ + "': " + msg);
  }
};

/// A transposed box is read through a buffer of at most this many bytes.
constexpr int64_t kScatterChunkBytes = 1 << 20;

/// The box of the stored tensor that holds weight `ref` (its view, mapped
/// through its perm: logical dim i is stored dim perm[i]). False when the
/// view does not fit the stored tensor.
bool storedBox(const WeightRef &ref, Shape &stored, Shape &start, Shape &size) {
  const Shape &logical = ref.type.shape;
  size_t rank = logical.size();
  stored = ref.storedShape.empty() ? logical : ref.storedShape;
  start.assign(rank, 0);
  size.assign(rank, -1);
  if (stored.size() != rank || (!ref.viewStart.empty() && ref.viewStart.size() != rank) ||
      (!ref.perm.empty() && ref.perm.size() != rank))
    return false;
  for (size_t i = 0; i < rank; ++i) {
    int64_t s = ref.perm.empty() ? static_cast<int64_t>(i) : ref.perm[i];
    int64_t at = ref.viewStart.empty() ? 0 : ref.viewStart[i];
    if (s < 0 || s >= static_cast<int64_t>(rank) || size[s] >= 0 || at < 0 || logical[i] < 0 ||
        at + logical[i] > stored[s])
      return false;
    start[s] = at;
    size[s] = logical[i];
  }
  return true;
}

/// Reads the box of `stored` into `out` (row-major over `size`): one read per run.
llvm::Error readBox(StoredBytes &bytes, llvm::ArrayRef<int64_t> stored, llvm::ArrayRef<int64_t> start,
                    llvm::ArrayRef<int64_t> size, size_t elem, uint8_t *out) {
  return forEachBoxRun(stored, start, size, [&](int64_t boxFirst, int64_t first, int64_t n) -> llvm::Error {
    return bytes.read(out + boxFirst * elem, first * elem, n * elem);
  });
}

/// Reads the box of `stored` into `out` as transpose(box, perm): each run
/// goes through a small buffer to its places in the result, so the memory is
/// the result plus one chunk (not a second copy, as transposeTensor would take).
llvm::Error readTransposedBox(StoredBytes &bytes, llvm::ArrayRef<int64_t> stored, llvm::ArrayRef<int64_t> start,
                              llvm::ArrayRef<int64_t> size, llvm::ArrayRef<int64_t> perm, size_t elem,
                              uint8_t *out) {
  int64_t rank = static_cast<int64_t>(size.size());
  std::vector<int64_t> strideOfStored(rank); // step in `out` along each stored dim
  for (int64_t i = rank - 1, stride = 1; i >= 0; --i) {
    strideOfStored[perm[i]] = stride;
    stride *= size[perm[i]];
  }
  int64_t chunk = std::max<int64_t>(1, kScatterChunkBytes / static_cast<int64_t>(elem));
  std::vector<uint8_t> buf;
  return forEachBoxRun(stored, start, size, [&](int64_t boxFirst, int64_t first, int64_t n) -> llvm::Error {
    for (int64_t done = 0; done < n; done += chunk) {
      int64_t len = std::min(chunk, n - done);
      buf.resize(static_cast<size_t>(len) * elem);
      if (auto err = bytes.read(buf.data(), (first + done) * elem, len * elem))
        return err;
      std::vector<int64_t> idx(rank); // the chunk's first element, as an index into the box
      int64_t dst = 0;
      for (int64_t rem = boxFirst + done, d = rank - 1; d >= 0; --d) {
        idx[d] = rem % size[d];
        rem /= size[d];
        dst += idx[d] * strideOfStored[d];
      }
      for (int64_t k = 0; k < len; ++k) {
        std::memcpy(out + dst * elem, buf.data() + k * elem, elem);
        for (int64_t d = rank - 1; d >= 0; --d) { // the box's next element
          dst += strideOfStored[d];
          if (++idx[d] < size[d])
            break;
          dst -= idx[d] * strideOfStored[d];
          idx[d] = 0;
        }
      }
    }
    return llvm::Error::success();
  });
}
} // namespace

/// A flat ref's elements: per tensor-parallel block its range overlaps, the
/// rows (of the block's first dimension) that hold the range are read, and
/// the range copied out; the padding stays zero.
static llvm::Error weightError(llvm::StringRef name, const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "weight '" + name + "': " + msg);
}

static llvm::Expected<Tensor> loadRef(const WeightRef &ref, llvm::StringRef name);

static llvm::Expected<Tensor> loadFlatPart(const WeightRef &ref, llvm::StringRef name) {
  const FlatPart &f = *ref.flat;
  auto fail = [&](const llvm::Twine &msg) { return weightError(name, msg); };
  WeightRef base = ref.unflattened();
  const Shape &shape = f.shape;
  int64_t count = ref.type.shape.empty() ? 1 : ref.type.shape[0];
  int64_t rank = static_cast<int64_t>(shape.size());
  if (ref.type.shape.size() != 1 || f.blocks < 1 || f.dim < 0 || (rank > 0 && f.dim >= rank) ||
      (rank > 0 && shape[f.dim] % f.blocks) || f.start < 0 || f.start + count > f.blocks * f.length ||
      numElements(shape) / f.blocks > f.length)
    return fail("its flat part " + ref.type.str() + " at " + llvm::Twine(f.start) + " does not fit " +
                llvm::Twine(f.blocks) + " blocks of " + llvm::Twine(f.length) + " elements of " +
                TensorType{ref.type.dtype, shape, true}.str());
  size_t elem = dtypeSize(ref.type.dtype);
  auto out = std::make_shared<std::vector<uint8_t>>(static_cast<size_t>(count) * elem, 0);
  int64_t perBlock = numElements(shape) / f.blocks;
  for (int64_t k = 0; k < f.blocks; ++k) {
    int64_t lo = std::max(f.start, k * f.length), hi = std::min(f.start + count, k * f.length + perBlock);
    if (lo >= hi)
      continue;
    int64_t a = lo - k * f.length, b = hi - k * f.length; // within block k's row-major elements
    Shape start(shape.size(), 0), size = shape;
    if (rank > 0) {
      size[f.dim] = shape[f.dim] / f.blocks;
      start[f.dim] = k * size[f.dim];
      int64_t row = size[0] ? numElements(size) / size[0] : 0;
      int64_t r0 = a / row, r1 = (b + row - 1) / row;
      start[0] += r0;
      size[0] = r1 - r0;
      a -= r0 * row;
      b -= r0 * row;
    }
    auto rows = loadRef(base.view(start, size), name);
    if (!rows)
      return rows.takeError();
    std::memcpy(out->data() + (lo - f.start) * elem, static_cast<const uint8_t *>(rows->data()) + a * elem,
                static_cast<size_t>(b - a) * elem);
  }
  return Tensor(ref.type.dtype, ref.type.shape, std::move(out));
}

/// The bytes of `ref` (which has data), named `name` in errors.
static llvm::Expected<Tensor> loadRef(const WeightRef &ref, llvm::StringRef name) {
  if (ref.flat)
    return loadFlatPart(ref, name);
  if (ref.repeat) { // the whole repeated tensor: each copy of each block is a view
    const WeightRef::Repeat &rep = *ref.repeat;
    size_t d = static_cast<size_t>(rep.dim), elem = dtypeSize(ref.type.dtype);
    int64_t outer = 1, inner = 1, width = ref.type.shape[d];
    for (size_t i = 0; i < ref.type.shape.size(); ++i)
      (i < d ? outer : i > d ? inner : width) *= i == d ? 1 : ref.type.shape[i];
    auto out = std::make_shared<std::vector<uint8_t>>(static_cast<size_t>(numElements(ref.type.shape)) * elem);
    for (int64_t b = 0; b < width; b += rep.block) {
      Shape start(ref.type.shape.size(), 0), size = ref.type.shape;
      start[d] = b;
      size[d] = rep.block;
      auto part = loadRef(ref.view(start, size), name);
      if (!part)
        return part.takeError();
      size_t run = static_cast<size_t>(rep.block * inner) * elem;
      for (int64_t o = 0; o < outer; ++o)
        std::memcpy(out->data() + (static_cast<size_t>(o * width + b) * inner) * elem,
                    static_cast<const uint8_t *>(part->data()) + static_cast<size_t>(o) * run, run);
    }
    return Tensor(ref.type.dtype, ref.type.shape, std::move(out));
  }
  if (ref.viewStart.empty() && ref.perm.empty() && ref.inlineBytes)
    return Tensor(ref.type.dtype, ref.type.shape, ref.inlineBytes); // shared, not copied
  Shape stored, start, size;
  if (!storedBox(ref, stored, start, size))
    return weightError(name, "its view " + ref.type.str() + " at " + shapeString(ref.viewStart) + " (perm " +
                                 shapeString(ref.perm) + ") does not fit its stored tensor " +
                                 TensorType{ref.type.dtype, stored, true}.str());
  StoredBytes bytes(ref, name);
  if (auto err = bytes.open())
    return std::move(err);
  size_t elem = dtypeSize(ref.type.dtype);
  auto out = std::make_shared<std::vector<uint8_t>>(static_cast<size_t>(numElements(size)) * elem);
  bool transposed = false;
  for (size_t i = 0; i < ref.perm.size(); ++i)
    transposed = transposed || ref.perm[i] != static_cast<int64_t>(i);
  if (auto err = transposed ? readTransposedBox(bytes, stored, start, size, ref.perm, elem, out->data())
                            : readBox(bytes, stored, start, size, elem, out->data()))
    return std::move(err);
  return Tensor(ref.type.dtype, ref.type.shape, std::move(out));
}

/// loadRef's tensor in the type programs hold (WeightRef::loadAs).
static llvm::Expected<Tensor> loadHeld(const WeightRef &ref, llvm::StringRef name) {
  auto stored = loadRef(ref, name);
  if (!stored || !ref.loadAs || *ref.loadAs == ref.type.dtype)
    return stored;
  if (ref.type.dtype != DType::F32 || !isHalfFloat(*ref.loadAs))
    return weightError(name, "held as " + dtypeName(*ref.loadAs) + " but stored as " + dtypeName(ref.type.dtype) +
                                 ": only float32 weights are held rounded to bf16 or fp16");
  auto bytes = std::make_shared<std::vector<uint8_t>>(static_cast<size_t>(stored->numel()) * 2);
  const float *src = reinterpret_cast<const float *>(stored->data());
  uint16_t *dst = reinterpret_cast<uint16_t *>(bytes->data());
  for (int64_t i = 0, n = stored->numel(); i < n; ++i)
    dst[i] = roundToHalf(*ref.loadAs, src[i]);
  return Tensor(*ref.loadAs, ref.type.shape, std::move(bytes));
}

llvm::Expected<Tensor> WeightStore::load(llvm::StringRef name) const {
  const WeightRef *ref = find(name);
  if (!ref || !ref->hasData())
    return weightError(name, "no data is attached (graph parsed from IR text?)");
  return loadHeld(*ref, name);
}

llvm::Expected<Tensor> WeightStore::loadBox(llvm::StringRef name, llvm::ArrayRef<int64_t> start,
                                            llvm::ArrayRef<int64_t> size) const {
  const WeightRef *ref = find(name);
  if (!ref || !ref->hasData())
    return load(name); // its error
  const Shape &shape = ref->type.shape;
  bool inside = start.size() == shape.size() && size.size() == shape.size();
  for (size_t d = 0; inside && d < shape.size(); ++d)
    inside = start[d] >= 0 && size[d] >= 0 && start[d] + size[d] <= shape[d];
  if (!inside)
    return weightError(name, "box outside the tensor " + ref->type.str());
  return loadHeld(ref->view(start, size), name);
}

} // namespace partita
