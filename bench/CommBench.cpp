//===- CommBench.cpp - Partita's collectives against raw MPI, nccl-tests style --===//
//
//   mpirun -n 2 partita-commbench [--max-bytes N]
//
// For all-reduce, all-gather and reduce-scatter over 4 KB .. 64 MB (float32),
// times the MPI call made directly and through Partita's Communicator on the
// same buffers, and prints algbw = bytes / time and busbw = algbw * 2(n-1)/n
// (all-reduce) or (n-1)/n (all-gather, reduce-scatter), and the ratio
// Partita / MPI (target >= 0.95). Results are checked once per size, apart
// from the timed loops.
//===----------------------------------------------------------------------===//
#include "runtime/comm/Communicator.h"
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

} // namespace

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  size_t maxBytes = size_t(64) << 20;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::string(argv[i]) == "--max-bytes")
      maxBytes = std::stoull(argv[i + 1]);
  auto comm = rt::MpiCommunicator::world();
  int n = comm->size(), rank = comm->rank();
  if (rank == 0)
    std::printf("%-14s %10s %11s %11s %11s %11s %8s\n", "op", "bytes", "mpi algbw", "mpi busbw", "ours algbw",
                "ours busbw", "ratio");
  bool ok = true;
  for (const char *op : {"all_reduce", "all_gather", "reduce_scatter"}) {
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
        std::printf("%-14s %10zu %11.3f %11.3f %11.3f %11.3f %8.3f\n", op, bytes, algRaw, algRaw * factor, algOurs,
                    algOurs * factor, tRaw / tOurs);
    }
  }
  if (rank == 0)
    std::printf("correctness: %s\n", ok ? "ok" : "FAILED");
  MPI_Finalize();
  return ok ? 0 : 1;
}
