//===- Sharding.cpp -------------------------------------------------------===//
#include "compiler/ir/Sharding.h"
#include "llvm/ADT/StringSet.h"

namespace partita {

const MeshAxis *Mesh::find(llvm::StringRef name) const {
  for (const auto &a : axes)
    if (a.name == name)
      return &a;
  return nullptr;
}

int64_t Mesh::numDevices() const {
  int64_t n = 1;
  for (const auto &a : axes)
    n *= a.size;
  return n;
}

std::string Mesh::str() const {
  std::string s = "mesh<";
  for (size_t i = 0; i < axes.size(); ++i) {
    if (i)
      s += ", ";
    s += axes[i].name + "=" + std::to_string(axes[i].size);
  }
  return s + ">";
}

bool Mesh::operator==(const Mesh &o) const {
  if (axes.size() != o.axes.size())
    return false;
  for (size_t i = 0; i < axes.size(); ++i)
    if (axes[i].name != o.axes[i].name || axes[i].size != o.axes[i].size)
      return false;
  return true;
}

llvm::SmallVector<int64_t, 4> Mesh::coordinates(int64_t rank) const {
  llvm::SmallVector<int64_t, 4> c(axes.size(), 0);
  for (size_t i = axes.size(); i-- > 0;) {
    c[i] = rank % axes[i].size;
    rank /= axes[i].size;
  }
  return c;
}

int64_t Mesh::rankOf(llvm::ArrayRef<int64_t> coords) const {
  int64_t r = 0;
  for (size_t i = 0; i < axes.size(); ++i)
    r = r * axes[i].size + (i < coords.size() ? coords[i] : 0);
  return r;
}

llvm::SmallVector<int64_t, 8> Mesh::group(int64_t rank, llvm::StringRef axis) const {
  llvm::SmallVector<int64_t, 8> ranks;
  const MeshAxis *a = find(axis);
  if (!a)
    return ranks;
  size_t idx = static_cast<size_t>(a - axes.data());
  llvm::SmallVector<int64_t, 4> c = coordinates(rank);
  for (int64_t k = 0; k < a->size; ++k) {
    c[idx] = k;
    ranks.push_back(rankOf(c));
  }
  return ranks;
}

Sharding Sharding::replicated(size_t rank) {
  Sharding s;
  s.dims.resize(rank);
  return s;
}

bool Sharding::isReplicated() const {
  for (const auto &d : dims)
    if (!d.empty())
      return false;
  return partial.empty();
}

std::string Sharding::str() const {
  std::string s = "{";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i)
      s += ",";
    if (dims[i].empty()) {
      s += "R";
      continue;
    }
    s += "S(";
    for (size_t j = 0; j < dims[i].size(); ++j)
      s += (j ? "," : "") + dims[i][j];
    if (outerOf(i) != 1)
      s += ",outer=" + std::to_string(outerOf(i));
    s += ")";
  }
  s += "}";
  if (!partial.empty()) {
    s += partialMax ? " partial_max(" : " partial(";
    for (size_t j = 0; j < partial.size(); ++j)
      s += (j ? "," : "") + partial[j];
    s += ")";
  }
  return s;
}

llvm::Error Sharding::verify(const Mesh &mesh, llvm::ArrayRef<int64_t> shape) const {
  auto fail = [](const llvm::Twine &msg) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
  };
  if (dims.size() != shape.size())
    return fail("sharding " + str() + " has " + llvm::Twine(dims.size()) +
                " dimensions but the value has rank " + llvm::Twine(shape.size()));
  llvm::StringSet<> used;
  auto use = [&](const std::string &axis) -> llvm::Error {
    if (!mesh.find(axis))
      return fail("sharding " + str() + " names axis '" + axis + "' which is not in " + mesh.str());
    if (!used.insert(axis).second)
      return fail("sharding " + str() + " uses axis '" + axis + "' more than once");
    return llvm::Error::success();
  };
  for (size_t i = 0; i < dims.size(); ++i) {
    int64_t parts = 1;
    for (const auto &axis : dims[i]) {
      if (auto err = use(axis))
        return err;
      parts *= mesh.find(axis)->size;
    }
    if (outerOf(i) < 1 || (shape[i] >= 0 && shape[i] % outerOf(i) != 0))
      return fail("sharding " + str() + " has an outer factor that does not divide dimension " + llvm::Twine(i));
    if (shape[i] >= 0 && (shape[i] / outerOf(i)) % parts != 0)
      return fail("sharding " + str() + " splits dimension " + llvm::Twine(i) + " of size " +
                  llvm::Twine(shape[i]) + " into " + llvm::Twine(parts) +
                  " parts, which does not divide");
  }
  for (const auto &axis : partial)
    if (auto err = use(axis))
      return err;
  return llvm::Error::success();
}

llvm::SmallVector<int64_t, 4> Sharding::localShape(const Mesh &mesh,
                                                   llvm::ArrayRef<int64_t> shape) const {
  llvm::SmallVector<int64_t, 4> local(shape.begin(), shape.end());
  for (size_t i = 0; i < dims.size() && i < local.size(); ++i)
    for (const auto &axis : dims[i])
      if (const MeshAxis *a = mesh.find(axis))
        local[i] /= a->size;
  return local;
}

} // namespace partita
