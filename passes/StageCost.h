//===- StageCost.h - what a forward node costs a pipeline stage -----------===//
//
// assign-stages balances stages by a cost model per node of the forward
// graph, per micro-batch:
//   flops       2·M·N·K for a product, the elements written for the rest;
//   bytes       the bytes the node reads and writes (its operands' and
//               results'; a lookup reads the rows it writes, not the table);
//   parameters  the bytes of the weights it reads first (a weight counts once,
//               on the stage of its first reader: the embedding and a tied
//               head's table weigh on the first stage, the head on the last);
//   stashed     the bytes of its operands its backward reads (the inputs of
//               products and of nonlinear ops, not weights), which a stage
//               keeps per micro-batch in flight.
// A node's time is roofline-shaped, in FLOP: max(flops, bytes × intensity),
// `intensity` the FLOP a device does in the time it moves one byte (its
// machine balance): a norm or softmax over a wide row costs its traffic, a
// product its arithmetic. The stages' boundaries minimise the slowest stage's
// time; the rest is reported per stage.
//===----------------------------------------------------------------------===//
#pragma once
#include "compiler/ir/Graph.h"
#include "llvm/ADT/DenseSet.h"

namespace partita {

struct NodeCost {
  double flops = 0, bytes = 0, parameters = 0, stashed = 0;
  NodeCost &operator+=(const NodeCost &o) {
    flops += o.flops, bytes += o.bytes, parameters += o.parameters, stashed += o.stashed;
    return *this;
  }
  NodeCost operator-(const NodeCost &o) const {
    return {flops - o.flops, bytes - o.bytes, parameters - o.parameters, stashed - o.stashed};
  }
  /// The roofline time in FLOP at `intensity` FLOP per byte.
  double time(double intensity) const { return std::max(flops, bytes * intensity); }
};

/// The default machine balance: FLOP per byte moved (an A100's 312 TFLOP/s
/// of bf16 over 2 TB/s is ~150; a CPU core's ~10). Products dominate either way.
inline constexpr double kDefaultIntensity = 64;

/// Node `n`'s cost; `seen`: the weights earlier nodes read (updated).
NodeCost forwardCost(const Node &n, llvm::DenseSet<const Value *> &seen);

} // namespace partita
