//===- HeapSettings.cpp - the rank's allocator, set for large collectives --===//
//
// Open MPI's shared-memory collectives allocate their reduction temporaries
// per call (a reduce-scatter of N bytes allocates about N). glibc serves an
// allocation above its mmap threshold (128 KiB, raised on each free up to
// 32 MiB) with a fresh mmap and unmaps it on free, so every large collective
// page-faults its temporaries in again: measured here with
// bench/tensor_parallel.sh, 2 ranks, reduce-scatter fell from 4 GB/s at 4 MB
// to 0.13 GB/s at 16 MB and above, all-reduce to 0.3 GB/s at 64 MB, for raw
// MPI and Partita alike, with every coll_tuned algorithm. The threshold cannot
// be raised past 32 MiB, so large blocks are kept off mmap altogether and the
// heap is not trimmed: a freed temporary is reused by the next call at memory
// speed (reduce-scatter 2.6 GB/s at 64 and 256 MB, all-reduce 5.5 GB/s). The
// price is that the rank's heap does not shrink back after its peak, which is
// what a training process's steady state does anyway. An allocation in
// another arena (a thread's) that its heap cannot hold is retried in the
// main arena.
//===----------------------------------------------------------------------===//
#include "runtime/comm/HeapSettings.h"
#include <malloc.h>

namespace partita::rt {

void keepLargeAllocationsOnTheHeap() {
#if defined(__GLIBC__)
  mallopt(M_MMAP_THRESHOLD, 32 << 20); // the most glibc takes; also ends the threshold's adjustment
  mallopt(M_MMAP_MAX, 0);
  mallopt(M_TRIM_THRESHOLD, 1 << 30); // mallopt takes an int: 1 GiB is kept before trimming
#endif
}

} // namespace partita::rt
