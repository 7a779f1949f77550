//===- MemoryPlanner.cpp --------------------------------------------------===//
#include "runtime/executor/MemoryPlanner.h"
#include <algorithm>
#include <map>
#include <numeric>

namespace partita::rt {

MemoryPlan planMemory(const std::vector<BufferRequest> &requests, size_t alignment) {
  MemoryPlan plan;
  plan.offsets.assign(requests.size(), 0);
  auto aligned = [&](size_t b) { return (b + alignment - 1) / alignment * alignment; };

  std::map<int64_t, int64_t> delta; // step -> change in live bytes
  for (const auto &r : requests) {
    delta[r.firstStep] += static_cast<int64_t>(r.bytes);
    delta[r.lastStep + 1] -= static_cast<int64_t>(r.bytes);
  }
  int64_t live = 0;
  for (const auto &[step, d] : delta) {
    live += d;
    plan.lowerBoundBytes = std::max(plan.lowerBoundBytes, static_cast<size_t>(live));
  }

  std::vector<size_t> order(requests.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return requests[a].bytes > requests[b].bytes; });
  std::vector<size_t> placed;
  for (size_t i : order) {
    const auto &r = requests[i];
    size_t need = aligned(r.bytes);
    if (need == 0)
      continue;
    // Intervals of the arena taken by buffers alive at the same time, by offset.
    std::vector<std::pair<size_t, size_t>> busy;
    for (size_t j : placed) {
      const auto &o = requests[j];
      if (o.firstStep <= r.lastStep && r.firstStep <= o.lastStep)
        busy.push_back({plan.offsets[j], plan.offsets[j] + aligned(o.bytes)});
    }
    std::sort(busy.begin(), busy.end());
    // Smallest gap that fits (best fit), else after the last busy interval.
    size_t best = SIZE_MAX, bestGap = SIZE_MAX, cursor = 0;
    for (const auto &[begin, end] : busy) {
      if (begin >= cursor + need && begin - cursor < bestGap) {
        best = cursor;
        bestGap = begin - cursor;
      }
      cursor = std::max(cursor, end);
    }
    plan.offsets[i] = best != SIZE_MAX ? best : cursor;
    plan.arenaBytes = std::max(plan.arenaBytes, plan.offsets[i] + need);
    placed.push_back(i);
  }
  return plan;
}

} // namespace partita::rt
