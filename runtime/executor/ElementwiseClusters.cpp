//===- ElementwiseClusters.cpp --------------------------------------------===//
#include "runtime/executor/ElementwiseClusters.h"
#include "llvm/ADT/DenseMap.h"
#include <algorithm>

namespace partita::rt {

std::vector<ElementwiseCluster> formElementwiseClusters(const Graph &g,
                                                        const std::function<bool(const Node &)> &fusible,
                                                        const llvm::DenseSet<const Node *> &excluded) {
  llvm::DenseMap<const Node *, size_t> position;
  for (const Node *n : g.nodes())
    position[n] = position.size();
  std::vector<std::vector<const Node *>> members;
  llvm::DenseMap<const Node *, size_t> clusterOf;
  // `n` may join the union of clusters `cs` (and become the node where it
  // runs) if nothing outside reads a value of theirs before n's position.
  auto canJoin = [&](const std::vector<size_t> &cs, const Node *n) {
    auto inside = [&](const Node *user) {
      auto it = clusterOf.find(user);
      return user == n || (it != clusterOf.end() && std::find(cs.begin(), cs.end(), it->second) != cs.end());
    };
    for (size_t c : cs)
      for (const Node *m : members[c])
        for (const Value *out : m->outputs())
          for (const Node *user : out->users())
            if (!inside(user) && position.lookup(user) < position.lookup(n))
              return false;
    return true;
  };
  for (const Node *n : g.nodes()) {
    if (excluded.count(n) || n->numOutputs() != 1 || !fusible(*n))
      continue;
    const Shape &shape = n->output()->type().shape;
    // The clusters of n's operands (same shape) it can join; n joins all of
    // them at once when it can (one cluster where two chains meet), else
    // the first one it can.
    std::vector<size_t> candidates;
    for (const Value *in : n->inputs()) {
      const Node *p = in ? in->definingNode() : nullptr;
      auto it = p ? clusterOf.find(p) : clusterOf.end();
      if (it != clusterOf.end() && members[it->second][0]->output()->type().shape == shape &&
          std::find(candidates.begin(), candidates.end(), it->second) == candidates.end())
        candidates.push_back(it->second);
    }
    std::vector<size_t> join;
    if (!candidates.empty() && canJoin(candidates, n))
      join = candidates;
    else
      for (size_t c : candidates)
        if (canJoin({c}, n)) {
          join = {c};
          break;
        }
    size_t chosen = join.empty() ? members.size() : join[0];
    if (join.empty())
      members.emplace_back();
    for (size_t k = 1; k < join.size(); ++k) { // merge into the first, keeping program order
      for (const Node *m : members[join[k]])
        clusterOf[m] = chosen;
      members[chosen].insert(members[chosen].end(), members[join[k]].begin(), members[join[k]].end());
      members[join[k]].clear();
    }
    std::sort(members[chosen].begin(), members[chosen].end(),
              [&](const Node *a, const Node *b) { return position.lookup(a) < position.lookup(b); });
    members[chosen].push_back(n);
    clusterOf[n] = chosen;
  }

  std::vector<ElementwiseCluster> clusters;
  for (size_t c = 0; c < members.size(); ++c) {
    if (members[c].size() < 2)
      continue;
    ElementwiseCluster cl;
    cl.nodes = members[c];
    llvm::DenseSet<const Value *> seen;
    for (const Node *m : cl.nodes) {
      for (const Value *in : m->inputs()) {
        const Node *p = in ? in->definingNode() : nullptr;
        bool internal = p && clusterOf.count(p) && clusterOf.lookup(p) == c;
        if (in && !internal && seen.insert(in).second)
          cl.inputs.push_back(in);
      }
      const Value *out = m->output();
      bool readOutside = g.isGraphOutput(out);
      for (const Node *user : out->users())
        readOutside |= !clusterOf.count(user) || clusterOf.lookup(user) != c;
      if (readOutside)
        cl.outputs.push_back(out);
    }
    clusters.push_back(std::move(cl));
  }
  return clusters;
}

} // namespace partita::rt
