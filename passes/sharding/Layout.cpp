//===- Layout.cpp ---------------------------------------------------------===//
#include "passes/sharding/Layout.h"
#include <algorithm>

namespace partita {

std::string Layout::str() const {
  if (partial)
    return "partial";
  return dim < 0 ? "R" : "S(" + std::to_string(dim) + ")";
}

Layout layoutOf(const Value *v, llvm::StringRef axis) {
  Layout l;
  if (!v || !v->sharding())
    return l;
  const Sharding &s = *v->sharding();
  for (size_t d = 0; d < s.dims.size(); ++d)
    if (std::find(s.dims[d].begin(), s.dims[d].end(), axis) != s.dims[d].end())
      l.dim = static_cast<int64_t>(d);
  l.partial = std::find(s.partial.begin(), s.partial.end(), axis) != s.partial.end();
  return l;
}

void setLayout(Value *v, llvm::StringRef axis, const Layout &l) {
  Sharding s = v->sharding() ? *v->sharding() : Sharding::replicated(v->type().shape.size());
  s.dims.resize(v->type().shape.size());
  for (auto &d : s.dims)
    d.erase(std::remove(d.begin(), d.end(), axis), d.end());
  s.partial.erase(std::remove(s.partial.begin(), s.partial.end(), axis), s.partial.end());
  if (l.dim >= 0)
    s.dims[l.dim].push_back(axis.str());
  if (l.partial)
    s.partial.push_back(axis.str());
  v->sharding() = s;
}

Sharding toSharding(const Layout &l, llvm::StringRef axis, size_t rank) {
  Sharding s = Sharding::replicated(rank);
  if (l.dim >= 0)
    s.dims[l.dim].push_back(axis.str());
  if (l.partial)
    s.partial.push_back(axis.str());
  return s;
}

} // namespace partita
