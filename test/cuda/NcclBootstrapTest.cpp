//===- NcclBootstrapTest.cpp - NCCL's unique id over MPI, without a GPU ----===//
//
// Run under mpirun (2 and 4 ranks, test/CMakeLists.txt). Every rank gets the
// root's 128-byte id (gathered and compared on rank 0), a different root
// makes a different id, and the "nccl" backend is registered and refuses to
// start without a CUDA device. Exits non-zero on any rank's failure.
//===----------------------------------------------------------------------===//
#include "runtime/comm/CommunicatorFactory.h"
#include "runtime/cuda/NcclCommunicator.h"
#include <cstdio>
#include <cstring>
#include <mpi.h>
#include <vector>

using namespace partita;

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1, failures = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm world = MPI_COMM_WORLD;
  auto fail = [&](const std::string &what) {
    std::fprintf(stderr, "rank %d: FAIL: %s\n", rank, what.c_str());
    ++failures;
  };
  auto first = rt::ncclIdOverMpi(&world, 0);
  auto second = rt::ncclIdOverMpi(&world, size - 1);
  if (!first || !second) {
    fail(llvm::toString(first ? second.takeError() : first.takeError()));
  } else {
    std::vector<char> all(128 * static_cast<size_t>(size));
    MPI_Gather(first->data(), 128, MPI_BYTE, all.data(), 128, MPI_BYTE, 0, MPI_COMM_WORLD);
    if (rank == 0) {
      bool nonzero = false;
      for (char c : *first)
        nonzero |= c != 0;
      if (!nonzero)
        fail("the unique id is all zeros");
      for (int r = 1; r < size; ++r)
        if (std::memcmp(all.data() + 128 * r, first->data(), 128) != 0)
          fail("rank " + std::to_string(r) + " got another id than rank 0 made");
      if (*first == *second)
        fail("two roots made the same id");
    }
  }
  auto none = rt::makeWorldCommunicator("nccl"); // no device given
  if (none)
    fail("the nccl backend started without a CUDA device");
  else if (std::string msg = llvm::toString(none.takeError()); msg != "the nccl communicator needs --device cuda")
    fail("unexpected refusal: " + msg);
  int total = 0;
  MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0)
    std::printf(total ? "FAILED on %d checks\n" : "ok: %d ranks share NCCL's unique id\n", total ? total : size);
  MPI_Finalize();
  return total ? 1 : 0;
}
