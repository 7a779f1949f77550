//===- HeapSettings.h - the rank's allocator, set for large collectives ----===//
#pragma once

namespace partita::rt {

/// Keeps large allocations on the heap, reused, for the rest of the process.
/// Call once per rank before MPI_Init (see HeapSettings.cpp for why).
void keepLargeAllocationsOnTheHeap();

} // namespace partita::rt
