//===- StatePlacement.cpp -------------------------------------------------===//
#include "runtime/checkpoint/StatePlacement.h"
#include "llvm/ADT/StringExtras.h"

namespace partita::rt {

static llvm::Error fail(const llvm::Twine &msg) { return llvm::createStringError(llvm::inconvertibleErrorCode(), msg); }

namespace {

struct AxisSplit {
  int64_t dim = -1, outer = 1;
};

/// "R" -> no split; "S(d)" / "S(d,outer=k)" -> dimension d (outer k).
llvm::Expected<AxisSplit> parseLayout(llvm::StringRef s, llvm::StringRef param, llvm::StringRef axis) {
  AxisSplit a;
  if (s == "R")
    return a;
  llvm::StringRef body = s;
  if (body.consume_front("S(") && body.consume_back(")")) {
    auto [dim, rest] = body.split(',');
    bool ok = !dim.getAsInteger(10, a.dim) && a.dim >= 0;
    if (ok && !rest.empty())
      ok = rest.consume_front("outer=") && !rest.getAsInteger(10, a.outer) && a.outer >= 1;
    if (ok)
      return a;
  }
  return fail("plan.json gives parameter '" + param + "' the layout '" + s + "' on mesh axis " + axis +
              ": a parameter is replicated (R) or split on one dimension (S(d)), never a partial value");
}

} // namespace

llvm::Expected<StatePlacement> placeState(const Plan &plan, size_t param, const std::map<std::string, int64_t> &coords,
                                          int64_t heldNumel) {
  const std::string &name = plan.params[param];
  if (param >= plan.paramTypes.size() || param >= plan.paramLayouts.size())
    return fail("plan.json has no shard type or layout for parameter '" + name + "'");
  const Shape &shard = plan.paramTypes[param].shape;
  const size_t rank = shard.size();
  StatePlacement out;
  out.whole = shard;
  Shape outer(rank, 1), block(rank, 0), splits(rank, 1);
  out.writer = true;
  std::vector<bool> splitBy(rank, false);
  for (const MeshAxis &axis : plan.mesh.axes) {
    auto it = plan.paramLayouts[param].find(axis.name);
    auto split = parseLayout(it == plan.paramLayouts[param].end() ? "R" : it->second, name, axis.name);
    if (!split)
      return split.takeError();
    auto coord = coords.find(axis.name);
    int64_t c = coord == coords.end() ? 0 : coord->second;
    if (split->dim < 0) {
      // A replica: one along the axis writes, parameter i the one at
      // coordinate i mod the axis size (the replicas share the writing).
      // Pipeline stages hold different parameters; dp's ZeRO parts are
      // each written by their own rank.
      bool part = axis.name == mesh_axis::kData && heldNumel != numElements(shard);
      if (axis.name != mesh_axis::kPipeline && !part && c != static_cast<int64_t>(param) % axis.size)
        out.writer = false;
      continue;
    }
    size_t d = static_cast<size_t>(split->dim);
    if (d >= rank || splitBy[d])
      return fail("parameter '" + name + "' is split on dimension " + llvm::Twine(split->dim) + " by mesh axis " +
                  axis.name + (d >= rank ? " but has only " + llvm::Twine(rank) + " dimensions"
                                         : llvm::Twine(" and another axis: checkpoints place one split per dimension")));
    splitBy[d] = true;
    outer[d] = split->outer;
    splits[d] = axis.size;
    block[d] = c;
    out.whole[d] = shard[d] * axis.size;
  }
  // The box in the view where each dimension with an outer factor is [outer, n / outer].
  Shape start, extent, viewOuter;
  for (size_t d = 0; d < rank; ++d) {
    int64_t o = outer[d];
    if (out.whole[d] % (o * splits[d]) != 0)
      return fail("parameter '" + name + "': dimension " + llvm::Twine(d) + " of " + llvm::Twine(out.whole[d]) +
                  " is not " + llvm::Twine(o) + " blocks split " + llvm::Twine(splits[d]) + " ways");
    int64_t inner = shard[d] / o;
    if (o > 1) {
      start.push_back(0);
      extent.push_back(o);
    }
    start.push_back(block[d] * inner);
    extent.push_back(inner);
    viewOuter.push_back(o);
  }
  bool anyOuter = false;
  for (int64_t o : viewOuter)
    anyOuter |= o > 1;
  out.box = StateBox::whole(anyOuter ? viewOuter : Shape{}, start, extent);
  const int64_t n = out.box.boxNumel();
  if (heldNumel == n)
    return out;
  // A ZeRO part: ceil(n / dp) elements of the shard's flat buffer.
  const MeshAxis *dp = plan.mesh.find(mesh_axis::kData);
  int64_t dpSize = dp ? dp->size : 1, k = heldNumel;
  if (dpSize <= 1 || k * dpSize < n || k * dpSize - n >= dpSize)
    return fail("the rank holds " + llvm::Twine(heldNumel) + " elements of parameter '" + name + "', whose shard has " +
                llvm::Twine(n) + ": neither the shard nor its part over " + llvm::Twine(dpSize) +
                " data-parallel ranks");
  auto coord = coords.find(mesh_axis::kData);
  int64_t x = coord == coords.end() ? 0 : coord->second;
  out.box.flatBegin = std::min(n, x * k);
  out.box.flatEnd = std::min(n, (x + 1) * k);
  return out;
}

bool placeInInitializer(const ParamTarget &t, std::string &name, Shape &whole, StateBox &box) {
  if (!t.repeat.empty() || t.stored.empty() || t.shape != whole ||
      (!t.perm.empty() && t.perm.size() != t.stored.size()) || (!t.start.empty() && t.start.size() != whole.size()))
    return false;
  Shape logical = t.stored;
  for (size_t d = 0; d < t.perm.size(); ++d)
    logical[d] = t.stored[static_cast<size_t>(t.perm[d])];
  if (logical.size() != whole.size())
    return false;
  for (size_t d = 0; d < whole.size(); ++d)
    if ((t.start.empty() ? 0 : t.start[d]) + whole[d] > logical[d])
      return false;
  bool outer = false;
  for (int64_t o : box.outer)
    outer |= o > 1;
  if (outer && logical != whole)
    return false;
  if (!t.start.empty())
    for (size_t d = 0; d < whole.size(); ++d)
      box.start[d] += t.start[d]; // no outer factors: one view dimension per dimension
  name = t.initializer;
  if (!t.perm.empty()) {
    name += " transposed(";
    for (size_t d = 0; d < t.perm.size(); ++d)
      name += (d ? "," : "") + std::to_string(t.perm[d]);
    name += ")";
  }
  whole = logical;
  return true;
}

} // namespace partita::rt
