//===- Calibrate.h - partita plan --calibrate: this machine, measured -----===//
//
// Measures what Partita's CPU runtime reaches here, with the threads one of
// `devicesPerNode` ranks gets (the cores shared out, as launch does):
//   matmul_flops   a 1024x1024 by 1024x4096 product, float32 and bf16 (both
//                  operands widened from bf16: the runtime's bf16 GEMM);
//   memory_bandwidth  an Add of two 64M-element float32 tensors (bytes read
//                  and written per second);
//   vector_flops   Tanh over 256K elements (cache-resident), elements/s;
//   kernel_overhead  a chain of 200 4x4 products, per kernel;
//   links          all-reduces between two ranks through Partita's MPI
//                  communicator (mpirun re-running this binary): 8 bytes for
//                  the latency, 64 MB for the bandwidth (one node: both links
//                  get the same figures).
// Each rate is a median of repeated runs; efficiencies are 1 (the rates are
// what the runtime reached, not a datasheet's).
//===----------------------------------------------------------------------===//
#pragma once
#include "planner/Machine.h"
#include <functional>

namespace partita {

llvm::Expected<planner::Machine> calibrateThisMachine(int devicesPerNode,
                                                      const std::function<void(const std::string &)> &progress);

/// The hidden worker mpirun starts: times the all-reduces, prints
/// "latency SECONDS bandwidth BYTES_PER_SECOND" from rank 0.
int calibrateLinksWorker();

} // namespace partita
