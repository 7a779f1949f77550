//===- Parallel.h - OpenMP loops with a grain size ------------------------===//
#pragma once
#include <cstdint>
#include <omp.h>

namespace partita::rt::cpu {

/// Runs body(begin, end) over [0, n) split across the OpenMP team, serially
/// when n is below `grain` (a team costs more than it saves on small work).
template <typename F> void parallelFor(int64_t n, int64_t grain, F body) {
  if (n <= grain || omp_get_max_threads() == 1) {
    body(int64_t{0}, n);
    return;
  }
#pragma omp parallel
  {
    int64_t nt = omp_get_num_threads(), t = omp_get_thread_num();
    int64_t chunk = (n + nt - 1) / nt;
    int64_t b = t * chunk, e = b + chunk < n ? b + chunk : n;
    if (b < e)
      body(b, e);
  }
}

} // namespace partita::rt::cpu
