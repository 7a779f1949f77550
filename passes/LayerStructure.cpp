//===- LayerStructure.cpp -------------------------------------------------===//
#include "passes/LayerStructure.h"
#include "passes/ClassifyParameters.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include <string>

namespace partita {

namespace {

/// The carried nodes between consecutive cuts (steps 1 and 2): per segment,
/// those the forward reads on from, and those it does not (read by the
/// backward only).
struct Segments {
  std::vector<std::vector<const Node *>> main, copies;
};

Segments segments(llvm::ArrayRef<const Node *> forward) {
  const size_t n = forward.size();
  llvm::DenseMap<const Node *, size_t> pos;
  for (size_t i = 0; i < n; ++i)
    pos[forward[i]] = i;
  // Computed from the data (a graph input) and from a trainable weight: an
  // activation. (A weight's own cast or transpose is no activation.)
  llvm::DenseSet<const Value *> fromData, fromWeight;
  std::vector<bool> carries(n, false);
  for (size_t i = 0; i < n; ++i) {
    bool data = false, weight = false;
    for (const Value *in : forward[i]->inputs()) {
      if (!in)
        continue;
      data |= !in->definingNode() || fromData.count(in);
      weight |= (in->definingNode() && isTrainableWeight(*in->definingNode())) || fromWeight.count(in);
    }
    for (const Value *out : forward[i]->outputs()) {
      if (data)
        fromData.insert(out);
      if (weight)
        fromWeight.insert(out);
    }
    carries[i] = data && weight;
  }
  // A node only the backward reads (a copy saved for it, which the sort
  // places right before its reader there) neither holds what it reads live
  // nor cuts: it joins the segment of what it reads, after the cuts are made.
  // (A result nothing reads, the model's output, is no such copy.)
  std::vector<bool> side(n, false);
  for (size_t i = 0; i < n; ++i) {
    bool readHere = false, readElsewhere = false;
    for (const Value *out : forward[i]->outputs())
      for (const Node *u : out->users())
        (pos.count(u) ? readHere : readElsewhere) = true;
    side[i] = readElsewhere && !readHere;
  }
  // How many carried values are still to be read after each node: each
  // counts from its node to its last reader in the forward.
  std::vector<int64_t> born(n, 0), dies(n, 0);
  for (size_t i = 0; i < n; ++i) {
    if (!carries[i] || side[i])
      continue;
    for (const Value *out : forward[i]->outputs()) {
      size_t last = i;
      for (const Node *u : out->users())
        if (auto it = pos.find(u); it != pos.end() && !side[it->second] && it->second > last)
          last = it->second;
      if (last > i) {
        ++born[i];
        ++dies[last];
      }
    }
  }
  Segments out;
  out.main.emplace_back();
  llvm::DenseMap<const Node *, size_t> segmentOf;
  int64_t live = 0;
  for (size_t i = 0; i < n; ++i) {
    live += born[i] - dies[i];
    if (carries[i] && !side[i]) {
      segmentOf[forward[i]] = out.main.size() - 1;
      out.main.back().push_back(forward[i]);
    }
    if (live == 1 && !out.main.back().empty())
      out.main.emplace_back();
  }
  if (out.main.back().empty())
    out.main.pop_back();
  out.copies.resize(out.main.size());
  for (size_t i = 0; i < n; ++i) {
    if (!carries[i] || !side[i])
      continue;
    for (const Value *in : forward[i]->inputs())
      if (auto it = in ? segmentOf.find(in->definingNode()) : segmentOf.end(); it != segmentOf.end()) {
        segmentOf[forward[i]] = it->second;
        out.copies[it->second].push_back(forward[i]);
        break;
      }
  }
  return out;
}

std::string signature(const std::vector<const Node *> &segment) {
  std::string s;
  for (const Node *n : segment)
    s += n->domain() + "." + n->op() + ";";
  return s;
}

} // namespace

std::vector<std::vector<const Node *>> layersByStructure(llvm::ArrayRef<const Node *> forward) {
  Segments seg = segments(forward);
  std::vector<std::string> sig;
  for (const auto &s : seg.main)
    sig.push_back(signature(s));
  const size_t n = sig.size();
  // Step 3: per period p, the longest streak of segments i with sig[i] ==
  // sig[i + p]; a streak of k from a makes the run [a, a + k + p), whose
  // whole periods are layers. The period that covers the most wins (the
  // smallest among equals: two layers repeat with twice a layer's period too).
  size_t bestPeriod = 0, bestStart = 0, bestLayers = 0;
  for (size_t p = 1; p <= 8 && 2 * p <= n; ++p) {
    size_t streak = 0;
    for (size_t i = 0; i + p < n; ++i) {
      streak = sig[i] == sig[i + p] ? streak + 1 : 0;
      size_t count = (streak + p) / p; // whole periods in the run ending at i + p
      if (streak >= p && count * p > bestLayers * bestPeriod) {
        bestPeriod = p, bestLayers = count, bestStart = i + 1 - streak;
      }
    }
  }
  std::vector<std::vector<const Node *>> layers;
  if (bestPeriod == 0)
    return layers;
  for (size_t k = 0, first = bestStart; k < bestLayers; ++k, first += bestPeriod) {
    layers.emplace_back();
    for (size_t j = first; j < first + bestPeriod; ++j) {
      layers.back().insert(layers.back().end(), seg.main[j].begin(), seg.main[j].end());
      layers.back().insert(layers.back().end(), seg.copies[j].begin(), seg.copies[j].end());
    }
  }
  return layers;
}

} // namespace partita
