//===- MemoryPlanner.h - liveness-based placement in one arena ------------===//
//
// Each buffer is live from the step that writes it to the last step that reads
// it. Buffers are placed greedily by size (largest first) at the lowest offset
// that does not overlap a placed buffer with an intersecting lifetime, the
// strategy TFLite's arena planner calls "greedy by size".
//
//===----------------------------------------------------------------------===//
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace partita::rt {

struct BufferRequest {
  size_t bytes = 0;
  int64_t firstStep = 0; // written here
  int64_t lastStep = 0;  // last read here (inclusive)
};

struct MemoryPlan {
  std::vector<size_t> offsets; // per request
  size_t arenaBytes = 0;
  /// max over steps of the bytes simultaneously live: no placement does better.
  size_t lowerBoundBytes = 0;
};

MemoryPlan planMemory(const std::vector<BufferRequest> &requests, size_t alignment);

} // namespace partita::rt
