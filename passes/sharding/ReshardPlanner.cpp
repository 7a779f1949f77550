//===- ReshardPlanner.cpp -------------------------------------------------===//
#include "passes/sharding/ReshardPlanner.h"
#include <algorithm>

namespace partita {

const char *collectiveOpName(CollectiveKind k) {
  switch (k) {
  case CollectiveKind::AllReduce: return "AllReduce";
  case CollectiveKind::AllGather: return "AllGather";
  case CollectiveKind::ReduceScatter: return "ReduceScatter";
  case CollectiveKind::ShardSlice: return "ShardSlice";
  }
  return "?";
}

namespace {

using Axes = llvm::SmallVector<std::string, 1>;

bool has(llvm::ArrayRef<std::string> axes, llvm::StringRef a) {
  return std::find(axes.begin(), axes.end(), a) != axes.end();
}

bool usedIn(const Sharding &s, llvm::StringRef a) {
  for (const Axes &d : s.dims)
    if (has(d, a))
      return true;
  return has(s.partial, a);
}

/// `s` with exactly `rank` dimensions, no all-1 outer list, no stray max flag.
Sharding normalized(Sharding s, size_t rank) {
  s.dims.resize(rank);
  s.outer.resize(rank, 1);
  for (size_t d = 0; d < rank; ++d)
    if (s.dims[d].empty())
      s.outer[d] = 1;
  if (std::all_of(s.outer.begin(), s.outer.end(), [](int64_t o) { return o == 1; }))
    s.outer.clear();
  if (s.partial.empty())
    s.partialMax = false;
  return s;
}

/// Equal up to the order of the partial axes.
bool sameSharding(const Sharding &a, const Sharding &b) {
  if (a.dims != b.dims || a.partial.size() != b.partial.size() || a.partialMax != b.partialMax)
    return false;
  for (size_t d = 0; d < a.dims.size(); ++d)
    if (a.outerOf(d) != b.outerOf(d))
      return false;
  for (const std::string &p : a.partial)
    if (!has(b.partial, p))
      return false;
  return true;
}

// A dimension's outer factor belongs to its minor-most axis (Layout.h): the
// major axes split it in contiguous blocks, the minor one strided inside each.
void addMinorAxis(Sharding &s, size_t d, llvm::StringRef axis, int64_t outer) {
  s.outer.resize(s.dims.size(), 1);
  s.outer[d] = outer;
  if (std::all_of(s.outer.begin(), s.outer.end(), [](int64_t o) { return o == 1; }))
    s.outer.clear();
  s.dims[d].push_back(axis.str());
}

void removeMinorAxis(Sharding &s, size_t d) {
  s.dims[d].pop_back();
  if (d < s.outer.size())
    s.outer[d] = 1;
  if (std::all_of(s.outer.begin(), s.outer.end(), [](int64_t o) { return o == 1; }))
    s.outer.clear();
}

void removePartial(Sharding &s, llvm::StringRef axis) {
  s.partial.erase(std::find(s.partial.begin(), s.partial.end(), axis));
  if (s.partial.empty())
    s.partialMax = false;
}

} // namespace

llvm::Expected<std::vector<ReshardStep>> planReshard(const Sharding &fromIn, const Sharding &toIn, size_t rank) {
  using K = CollectiveKind;
  Sharding cur = normalized(fromIn, rank), to = normalized(toIn, rank);
  auto impossible = [&] {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "no reshard from " + fromIn.str() + " to " + toIn.str() +
                                       " (a partial sum or max cannot be created by communication)");
  };
  for (const std::string &a : to.partial)
    if (!has(cur.partial, a))
      return impossible();
  if (!to.partial.empty() && cur.partialMax != to.partialMax)
    return impossible();

  std::vector<ReshardStep> steps;
  auto push = [&](K kind, size_t d, int64_t outer, llvm::StringRef axis) {
    ReshardStep s{kind, kind == K::AllReduce ? -1 : static_cast<int64_t>(d), outer, false, axis.str(), cur};
    s.max = kind == K::AllReduce && cur.partialMax;
    steps.push_back(std::move(s));
  };
  // Dimension d holds a prefix of its target: its next target axis can be
  // added. A strict prefix is contiguous (outer 1); the whole target has its outer.
  auto holdsPrefix = [&](size_t d) {
    const Axes &c = cur.dims[d], &t = to.dims[d];
    return c.size() <= t.size() && std::equal(c.begin(), c.end(), t.begin()) &&
           (c.empty() || cur.outerOf(d) == (c.size() == t.size() ? to.outerOf(d) : 1));
  };
  // The outer factor of the next axis added to d: the target's for its last axis.
  auto outerOfNext = [&](size_t d) { return cur.dims[d].size() + 1 == to.dims[d].size() ? to.outerOf(d) : 1; };
  auto nextAxis = [&](size_t d) -> const std::string * {
    if (!holdsPrefix(d) || cur.dims[d].size() == to.dims[d].size())
      return nullptr;
    return &to.dims[d][cur.dims[d].size()];
  };
  auto splitInTarget = [&](llvm::StringRef a) {
    for (const Axes &d : to.dims)
      if (has(d, a))
        return true;
    return false;
  };

  while (!sameSharding(cur, to)) {
    bool stepped = false;
    // 1. Local slices: free, and they shrink what later steps move.
    for (size_t d = 0; d < rank && !stepped; ++d)
      if (const std::string *a = nextAxis(d); a && !usedIn(cur, *a)) {
        std::string axis = *a;
        int64_t outer = outerOfNext(d);
        addMinorAxis(cur, d, axis, outer);
        push(K::ShardSlice, d, outer, axis);
        stepped = true;
      }
    // 2. Reduce-scatters: a partial sum becoming a split.
    for (size_t d = 0; d < rank && !stepped; ++d)
      if (const std::string *a = nextAxis(d); a && has(cur.partial, *a) && !cur.partialMax) {
        std::string axis = *a;
        int64_t outer = outerOfNext(d);
        removePartial(cur, axis);
        addMinorAxis(cur, d, axis, outer);
        push(K::ReduceScatter, d, outer, axis);
        stepped = true;
      }
    // 3. All-reduces: partials not kept, except sums waiting to be reduce-scattered.
    for (size_t i = 0; i < cur.partial.size() && !stepped; ++i) {
      std::string axis = cur.partial[i];
      if (has(to.partial, axis) || (!cur.partialMax && splitInTarget(axis)))
        continue;
      ReshardStep s{K::AllReduce, -1, 1, cur.partialMax, axis, {}};
      removePartial(cur, axis);
      s.result = cur;
      steps.push_back(std::move(s));
      stepped = true;
    }
    // 4. All-gathers of the minor-most axis of a dimension that is not on its way to its target.
    for (size_t d = 0; d < rank && !stepped; ++d)
      if (!holdsPrefix(d)) {
        std::string axis = cur.dims[d].back();
        int64_t outer = cur.outerOf(d);
        removeMinorAxis(cur, d);
        push(K::AllGather, d, outer, axis);
        stepped = true;
      }
    // 5. A partial sum whose target split never became reachable: reduce it whole.
    for (size_t i = 0; i < cur.partial.size() && !stepped; ++i)
      if (!has(to.partial, cur.partial[i])) {
        std::string axis = cur.partial[i];
        ReshardStep s{K::AllReduce, -1, 1, cur.partialMax, axis, {}};
        removePartial(cur, axis);
        s.result = cur;
        steps.push_back(std::move(s));
        stepped = true;
      }
    if (!stepped)
      return impossible();
  }
  if (!steps.empty())
    steps.back().result = to; // the target's own order of partial axes
  return steps;
}

llvm::Expected<std::vector<ReshardStep>> planReshard(const Layout &from, const Layout &to) {
  size_t rank = static_cast<size_t>(std::max<int64_t>({from.dim, to.dim, 0}) + 1);
  auto steps = planReshard(toSharding(from, "axis", rank), toSharding(to, "axis", rank), rank);
  if (!steps)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "no reshard from " + from.str() + " to " + to.str() +
                                       " (a partial sum or max cannot be created by communication)");
  for (ReshardStep &s : *steps) {
    s.axis.clear();
    s.result = Sharding();
  }
  return steps;
}

static Node *collectiveNode(Graph &g, const ReshardStep &step, Value *input, llvm::StringRef axis,
                            llvm::StringRef nameHint) {
  Node *n = g.createNode(collectiveOpName(step.kind), {input}, {nameHint.str()}, "partita");
  n->setAttr("axis", Attribute::ofString(axis.str()));
  if (step.kind != CollectiveKind::AllReduce)
    n->setAttr("dim", Attribute::ofInt(step.dim));
  if (step.max)
    n->setAttr("reduce", Attribute::ofString("max"));
  if (step.outer != 1)
    n->setAttr("outer", Attribute::ofInt(step.outer));
  n->output()->type() = input->type();
  return n;
}

Value *makeCollective(Graph &g, const ReshardStep &step, Value *input, llvm::StringRef axis,
                      const Layout &result, llvm::StringRef nameHint) {
  Node *n = collectiveNode(g, step, input, axis, nameHint);
  n->output()->sharding() = input->sharding(); // other axes stay as they are
  setLayout(n->output(), axis, result);
  return n->output();
}

Value *makeCollective(Graph &g, const ReshardStep &step, Value *input, llvm::StringRef nameHint) {
  Node *n = collectiveNode(g, step, input, step.axis, nameHint);
  n->output()->sharding() = step.result;
  return n->output();
}

llvm::Expected<Value *> lowerReshard(Graph &g, Value *in, const Sharding &to, llvm::StringRef name,
                                     llvm::function_ref<void(Node *)> made) {
  size_t rank = in->type().shape.size();
  auto steps = planReshard(in->sharding() ? *in->sharding() : Sharding::replicated(rank), to, rank);
  if (!steps)
    return steps.takeError();
  Value *v = in;
  for (size_t i = 0; i < steps->size(); ++i) {
    v = makeCollective(g, (*steps)[i], v, i + 1 == steps->size() ? name.str() : in->name() + ".gathered");
    if (made)
      made(v->definingNode());
  }
  return v;
}

} // namespace partita
