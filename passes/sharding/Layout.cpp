//===- Layout.cpp ---------------------------------------------------------===//
#include "passes/sharding/Layout.h"
#include <algorithm>

namespace partita {

std::string Layout::str() const {
  if (partial)
    return max ? "partial_max" : "partial";
  if (dim < 0)
    return "R";
  return "S(" + std::to_string(dim) + (outer != 1 ? ",outer=" + std::to_string(outer) : "") + ")";
}

Layout layoutOf(const Value *v, llvm::StringRef axis) {
  Layout l;
  if (!v || !v->sharding())
    return l;
  const Sharding &s = *v->sharding();
  for (size_t d = 0; d < s.dims.size(); ++d)
    if (std::find(s.dims[d].begin(), s.dims[d].end(), axis) != s.dims[d].end()) {
      l.dim = static_cast<int64_t>(d);
      l.outer = s.dims[d].back() == axis ? s.outerOf(d) : 1;
    }
  l.partial = std::find(s.partial.begin(), s.partial.end(), axis) != s.partial.end();
  l.max = l.partial && s.partialMax;
  return l;
}

void setLayout(Value *v, llvm::StringRef axis, const Layout &l, bool major) {
  Sharding s = v->sharding() ? *v->sharding() : Sharding::replicated(v->type().shape.size());
  s.dims.resize(v->type().shape.size());
  for (auto &d : s.dims)
    d.erase(std::remove(d.begin(), d.end(), axis), d.end());
  s.partial.erase(std::remove(s.partial.begin(), s.partial.end(), axis), s.partial.end());
  s.outer.resize(s.dims.size(), 1);
  for (size_t d = 0; d < s.dims.size(); ++d)
    if (s.dims[d].empty())
      s.outer[d] = 1;
  if (l.dim >= 0) {
    auto &axes = s.dims[l.dim];
    if (major && !axes.empty()) // the minor axes keep their outer factor
      axes.insert(axes.begin(), axis.str());
    else {
      axes.push_back(axis.str());
      s.outer[l.dim] = l.outer;
    }
  }
  if (std::all_of(s.outer.begin(), s.outer.end(), [](int64_t o) { return o == 1; }))
    s.outer.clear();
  if (l.partial) {
    s.partial.push_back(axis.str());
    s.partialMax = l.max;
  }
  v->sharding() = s;
}

Sharding toSharding(const Layout &l, llvm::StringRef axis, size_t rank) {
  Sharding s = Sharding::replicated(rank);
  if (l.dim >= 0) {
    s.dims[l.dim].push_back(axis.str());
    if (l.outer != 1) {
      s.outer.assign(rank, 1);
      s.outer[l.dim] = l.outer;
    }
  }
  if (l.partial) {
    s.partial.push_back(axis.str());
    s.partialMax = l.max;
  }
  return s;
}

} // namespace partita
