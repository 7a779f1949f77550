//===- Calibrate.h - partita plan --calibrate: this machine, measured -----===//
//
// Measures what Partita's CPU runtime reaches here: `devicesPerNode` ranks
// (at least two) under mpirun, each with its share of the cores (as launch
// gives them), all measuring at once, so each rate is what one device gets
// while the node's others work too:
//   matmul_flops   a 1024x1024 by 1024x4096 product, float32 and bf16 (both
//                  operands widened from bf16: the runtime's bf16 GEMM);
//   memory_bandwidth  an Add of two 64M-element float32 tensors (bytes read
//                  and written per second);
//   vector_flops   the multiplies and adds of a fused tanh-GELU chain over [512, 3072]
//                  (its tanh at the rate below taken out), elements/s;
//   transcendental_flops  Tanh over 256K elements, elements/s;
//   kernel_overhead  a chain of 200 4x4 products, per kernel;
//   links          all-reduces over the ranks through Partita's MPI
//                  communicator: 8 bytes for the latency, 64 MB for the
//                  bandwidth (one node: both links get the same figures).
// Each rate is a median of repeated runs; efficiencies are 1 (the rates are
// what the runtime reached, not a datasheet's).
//===----------------------------------------------------------------------===//
#pragma once
#include "planner/Machine.h"
#include <functional>

namespace partita {

llvm::Expected<planner::Machine> calibrateThisMachine(int devicesPerNode,
                                                      const std::function<void(const std::string &)> &progress);

/// The hidden worker mpirun starts: every rank measures the device at once,
/// then the all-reduces; rank 0 prints progress lines and the description.
int calibrateWorker(int threads);

} // namespace partita
