//===- CommBench.cpp - Partita's collectives against raw MPI, nccl-tests style --===//
//
//   mpirun -n 2 partita-commbench [--max-bytes N]
//
// For all-reduce, all-gather and reduce-scatter over 4 KB .. 64 MB (float32),
// times the MPI call made directly and through Partita's Communicator on the
// same buffers, and prints algbw = bytes / time and busbw = algbw * 2(n-1)/n
// (all-reduce) or (n-1)/n (all-gather, reduce-scatter), and the ratio
// Partita / MPI (target >= 0.95). Results are checked once per size, apart
// from the timed loops. The machine's copy bandwidth is measured in the same
// run (every rank copying a 256 MB buffer at once, bytes read + written per
// second per rank) and each size's busbw printed as a fraction of it; per
// collective, the slowest size from 1 MB up against the fastest (the goal:
// >= 0.8, no cliff).
//===----------------------------------------------------------------------===//
#include "runtime/comm/Communicator.h"
#include "runtime/comm/HeapSettings.h"
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <mpi.h>
#include <string>
#include <vector>

using namespace partita;

namespace {

double timeOnce(const std::function<void()> &fn) {
  MPI_Barrier(MPI_COMM_WORLD);
  auto s = std::chrono::steady_clock::now();
  fn();
  double t = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - s).count(), worst = 0;
  // The slowest rank's time, as nccl-tests reports.
  MPI_Allreduce(&t, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return worst;
}

/// Medians of the two paths, timed alternately so both see the same noise.
std::pair<double, double> medianMicros(const std::function<void()> &a, const std::function<void()> &b, int iters) {
  for (int i = 0; i < 3; ++i) {
    a();
    b();
  }
  std::vector<double> ta, tb;
  for (int i = 0; i < iters; ++i) {
    ta.push_back(timeOnce(a));
    tb.push_back(timeOnce(b));
  }
  std::sort(ta.begin(), ta.end());
  std::sort(tb.begin(), tb.end());
  return {ta[ta.size() / 2], tb[tb.size() / 2]};
}

bool check(const char *op, const std::vector<float> &got, const std::vector<float> &want) {
  for (size_t i = 0; i < want.size(); ++i)
    if (std::fabs(got[i] - want[i]) > 1e-3f * std::max(1.0f, std::fabs(want[i]))) {
      std::fprintf(stderr, "%s: wrong result at %zu: %f, expected %f\n", op, i, got[i], want[i]);
      return false;
    }
  return true;
}

/// Bytes read plus written per second by one rank's memcpy of a 256 MB
/// buffer while every rank does the same (the median of 5), in GB/s.
double copyBandwidth() {
  size_t bytes = size_t(256) << 20;
  std::vector<char> a(bytes, 1), b(bytes, 2);
  std::vector<double> t;
  for (int i = 0; i < 6; ++i)
    t.push_back(timeOnce([&] { std::memcpy(b.data(), a.data(), bytes); }));
  t.erase(t.begin()); // the first touches the pages
  std::sort(t.begin(), t.end());
  return 2.0 * bytes / t[t.size() / 2] / 1e3;
}

} // namespace

int main(int argc, char **argv) {
  rt::keepLargeAllocationsOnTheHeap(); // as a launched rank does (both paths below get it)
  MPI_Init(&argc, &argv);
  size_t maxBytes = size_t(64) << 20;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::string(argv[i]) == "--max-bytes")
      maxBytes = std::stoull(argv[i + 1]);
  auto comm = rt::MpiCommunicator::world();
  int n = comm->size(), rank = comm->rank();
  double copy = copyBandwidth();
  if (rank == 0)
    std::printf("copy bandwidth: %.2f GB/s per rank (memcpy of 256 MB on every rank at once, bytes read + "
                "written)\n%-14s %10s %11s %11s %11s %11s %8s %8s\n",
                copy, "op", "bytes", "mpi algbw", "mpi busbw", "ours algbw", "ours busbw", "ratio", "of copy");
  bool ok = true;
  for (const char *op : {"all_reduce", "all_gather", "reduce_scatter"}) {
    double best = 0, worst = 1e30; // ours, 1 MB and up
    size_t bestBytes = 0, worstBytes = 0;
    bool ar = std::strcmp(op, "all_reduce") == 0, ag = std::strcmp(op, "all_gather") == 0;
    for (size_t bytes = 4096; bytes <= maxBytes; bytes *= 4) {
      size_t total = bytes / sizeof(float), block = total / n; // bytes = the full (gathered) buffer
      std::vector<float> in(ar ? total : (ag ? block : total)), out(ar ? total : (ag ? total : block));
      for (size_t i = 0; i < in.size(); ++i)
        in[i] = float((i % 97) + rank);
      // Correctness of Partita's path.
      std::vector<float> want(out.size());
      if (ar) {
        std::vector<float> buf = in;
        if (auto err = comm->allReduce(buf.data(), buf.size(), DType::F32)) {
          std::fprintf(stderr, "%s\n", llvm::toString(std::move(err)).c_str());
          ok = false;
        }
        for (size_t i = 0; i < total; ++i)
          want[i] = float(n * (i % 97) + n * (n - 1) / 2);
        ok &= check(op, buf, want);
      } else if (ag) {
        llvm::consumeError(comm->allGather(in.data(), out.data(), block, DType::F32));
        for (int r = 0; r < n; ++r)
          for (size_t i = 0; i < block; ++i)
            want[r * block + i] = float((i % 97) + r);
        ok &= check(op, out, want);
      } else {
        llvm::consumeError(comm->reduceScatter(in.data(), out.data(), block, DType::F32));
        for (size_t i = 0; i < block; ++i)
          want[i] = float(n * ((rank * block + i) % 97) + n * (n - 1) / 2);
        ok &= check(op, out, want);
      }
      int iters = bytes >= (size_t(16) << 20) ? 10 : 40;
      std::function<void()> raw, ours;
      if (ar) {
        raw = [&] { MPI_Allreduce(MPI_IN_PLACE, in.data(), int(total), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); };
        ours = [&] { llvm::consumeError(comm->allReduce(in.data(), total, DType::F32)); };
      } else if (ag) {
        raw = [&] { MPI_Allgather(in.data(), int(block), MPI_FLOAT, out.data(), int(block), MPI_FLOAT, MPI_COMM_WORLD); };
        ours = [&] { llvm::consumeError(comm->allGather(in.data(), out.data(), block, DType::F32)); };
      } else {
        raw = [&] { MPI_Reduce_scatter_block(in.data(), out.data(), int(block), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); };
        ours = [&] { llvm::consumeError(comm->reduceScatter(in.data(), out.data(), block, DType::F32)); };
      }
      auto [tRaw, tOurs] = medianMicros(raw, ours, iters);
      double factor = ar ? 2.0 * (n - 1) / n : double(n - 1) / n;
      double algRaw = bytes / tRaw / 1e3, algOurs = bytes / tOurs / 1e3; // GB/s
      if (rank == 0)
        std::printf("%-14s %10zu %11.3f %11.3f %11.3f %11.3f %8.3f %8.3f\n", op, bytes, algRaw, algRaw * factor,
                    algOurs, algOurs * factor, tRaw / tOurs, algOurs * factor / copy);
      if (bytes >= (size_t(1) << 20)) {
        if (algOurs > best)
          best = algOurs, bestBytes = bytes;
        if (algOurs < worst)
          worst = algOurs, worstBytes = bytes;
      }
    }
    if (rank == 0 && bestBytes)
      std::printf("%-14s slowest size from 1 MB (%zu) / fastest (%zu): %.2f\n", op, worstBytes, bestBytes,
                  worst / best);
  }
  if (rank == 0)
    std::printf("correctness: %s\n", ok ? "ok" : "FAILED");
  MPI_Finalize();
  return ok ? 0 : 1;
}
