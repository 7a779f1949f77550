//===- WeightStore.cpp ----------------------------------------------------===//
#include "compiler/ir/WeightStore.h"
#include <cstring>
#include <fstream>

namespace partita {

const WeightRef *WeightStore::find(llvm::StringRef name) const {
  auto it = refs_.find(name);
  return it == refs_.end() ? nullptr : &it->second;
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
  t.perm.assign(p.begin(), p.end());
  t.type.shape.clear();
  for (int64_t d : p)
    t.type.shape.push_back(type.shape[d]);
  return t;
}

WeightRef WeightRef::view(llvm::ArrayRef<int64_t> start, llvm::ArrayRef<int64_t> size) const {
  WeightRef v = *this;
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

namespace {
/// Copies the box [start, start+size) out of a row-major tensor of `shape`,
/// one innermost row at a time: copyRow(dst, first element, elements) reads
/// the row starting at that element of the whole tensor. False when a read
/// failed.
template <typename CopyRow>
bool copyBox(uint8_t *out, llvm::ArrayRef<int64_t> shape, llvm::ArrayRef<int64_t> start,
             llvm::ArrayRef<int64_t> size, size_t elem, CopyRow copyRow) {
  int64_t rank = static_cast<int64_t>(shape.size());
  if (numElements(size) == 0)
    return true;
  if (rank == 0)
    return copyRow(out, 0, 1);
  std::vector<int64_t> strides(rank, 1);
  for (int64_t d = rank - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * shape[d + 1];
  int64_t rowLen = size.back(), rows = numElements(size) / rowLen;
  for (int64_t r = 0; r < rows; ++r) {
    int64_t rem = r, src = start.back();
    for (int64_t d = rank - 2; d >= 0; --d) {
      src += (start[d] + rem % size[d]) * strides[d];
      rem /= size[d];
    }
    if (!copyRow(out + r * rowLen * elem, src, rowLen))
      return false;
  }
  return true;
}

std::shared_ptr<std::vector<uint8_t>> sliceBox(const uint8_t *data, llvm::ArrayRef<int64_t> shape,
                                               llvm::ArrayRef<int64_t> start, llvm::ArrayRef<int64_t> size,
                                               size_t elem) {
  auto out = std::make_shared<std::vector<uint8_t>>(numElements(size) * elem);
  copyBox(out->data(), shape, start, size, elem, [&](uint8_t *dst, int64_t first, int64_t n) {
    std::memcpy(dst, data + first * elem, n * elem);
    return true;
  });
  return out;
}
} // namespace

llvm::Expected<Tensor> WeightStore::loadBox(llvm::StringRef name, llvm::ArrayRef<int64_t> start,
                                            llvm::ArrayRef<int64_t> size) const {
  auto fail = [&](const llvm::Twine &msg) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "weight '" + name + "': " + msg);
  };
  const WeightRef *ref = find(name);
  if (!ref || !ref->hasData())
    return fail("no data is attached (graph parsed from IR text?)");
  const Shape &shape = ref->type.shape;
  bool inside = start.size() == shape.size() && size.size() == shape.size();
  for (size_t d = 0; inside && d < shape.size(); ++d)
    inside = start[d] >= 0 && size[d] >= 0 && start[d] + size[d] <= shape[d];
  if (!inside)
    return fail("box outside the tensor " + ref->type.str());
  if (!ref->viewStart.empty() || !ref->perm.empty()) { // a view or transpose: through the whole tensor
    auto whole = load(name);
    if (!whole)
      return whole.takeError();
    return Tensor(ref->type.dtype, Shape(size.begin(), size.end()),
                  sliceBox(whole->data(), shape, start, size, dtypeSize(ref->type.dtype)));
  }
  size_t elem = dtypeSize(ref->type.dtype);
  if (ref->inlineBytes)
    return Tensor(ref->type.dtype, Shape(size.begin(), size.end()),
                  sliceBox(ref->inlineBytes->data(), shape, start, size, elem));
  std::ifstream in(ref->file, std::ios::binary);
  if (!in)
    return fail("cannot open external data file '" + ref->file + "'");
  auto out = std::make_shared<std::vector<uint8_t>>(numElements(size) * elem);
  bool ok = copyBox(out->data(), shape, start, size, elem, [&](uint8_t *dst, int64_t first, int64_t n) {
    in.seekg(static_cast<std::streamoff>(ref->offset + first * elem));
    in.read(reinterpret_cast<char *>(dst), static_cast<std::streamsize>(n * elem));
    return static_cast<bool>(in);
  });
  if (!ok)
    return fail("external data file '" + ref->file + "' is shorter than offset " + llvm::Twine(ref->offset) +
                " + length " + llvm::Twine(ref->length));
  return Tensor(ref->type.dtype, Shape(size.begin(), size.end()), std::move(out));
}

llvm::Expected<Tensor> WeightStore::load(llvm::StringRef name) const {
  auto fail = [&](const llvm::Twine &msg) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "weight '" + name + "': " + msg);
  };
  const WeightRef *ref = find(name);
  if (!ref || !ref->hasData())
    return fail("no data is attached (graph parsed from IR text?)");
  if (!ref->viewStart.empty() || !ref->perm.empty()) {
    WeightRef whole = *ref;
    whole.viewStart.clear();
    whole.perm.clear();
    whole.type.shape = ref->storedShape;
    WeightStore one;
    one.add(name.str(), whole);
    auto full = one.load(name);
    if (!full)
      return full.takeError();
    size_t elem = dtypeSize(ref->type.dtype);
    Tensor logical = ref->perm.empty() ? *full : transposeTensor(*full, ref->perm);
    if (ref->viewStart.empty())
      return logical;
    return Tensor(ref->type.dtype, ref->type.shape,
                  sliceBox(logical.data(), logical.shape(), ref->viewStart, ref->type.shape, elem));
  }
  if (ref->inlineBytes)
    return Tensor(ref->type.dtype, ref->type.shape, ref->inlineBytes);
  std::ifstream in(ref->file, std::ios::binary);
  if (!in)
    return fail("cannot open external data file '" + ref->file + "'");
  auto bytes = std::make_shared<std::vector<uint8_t>>(ref->length);
  in.seekg(static_cast<std::streamoff>(ref->offset));
  in.read(reinterpret_cast<char *>(bytes->data()), static_cast<std::streamsize>(ref->length));
  if (!in)
    return fail("external data file '" + ref->file + "' is shorter than offset " +
                llvm::Twine(ref->offset) + " + length " + llvm::Twine(ref->length));
  return Tensor(ref->type.dtype, ref->type.shape, std::move(bytes));
}

} // namespace partita
