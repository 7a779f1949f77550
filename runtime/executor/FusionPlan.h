//===- FusionPlan.h - which nodes a device runs fused ---------------------===//
//
// Decided once per program, before kernels are built, from the device's
// entries in the KernelRegistry:
//  - operand fusion: a producer (a Transpose) whose every consumer reads it
//    through its input (strides) never runs; a matmul both of whose operands
//    are Casts widening the same half type reads the half values (a device
//    with a half GEMM registers the Cast operand fusion), and a Cast so read
//    by all its consumers never runs;
//  - epilogue fusion: a single-input consumer folded into its producer's
//    kernel (a GELU into a matmul, or a Transpose written through strides);
//  - elementwise clusters (ElementwiseClusters.h) run as one step where their
//    last node is;
//  - views: Reshape-like nodes whose result is their input's bytes.
//===----------------------------------------------------------------------===//
#pragma once
#include "runtime/executor/ElementwiseClusters.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

namespace partita::rt {

class FusionPlan {
public:
  FusionPlan(const Graph &g, DeviceType device);

  /// Producers read in place by all their consumers (they get no step).
  bool readInPlace(const Node *n) const { return readInPlace_.count(n); }
  /// The producer `consumer` reads its operand k through (null: the operand
  /// itself): a Transpose read in place, or a bf16 widening.
  const Node *readThrough(const Node &consumer, size_t k) const;
  /// The value the kernel of `consumer` reads for its operand k: the
  /// operand, what a producer read through reads, or a widening's bf16 input.
  const Value *operandValue(const Node &consumer, size_t k) const;
  /// The consumer to fold into `n`'s kernel, or null.
  const Node *epilogue(const Node &n) const;
  /// The cluster that runs at `n` (its last node), or null.
  const ElementwiseCluster *clusterAt(const Node *n) const {
    auto it = clusterAt_.find(n);
    return it == clusterAt_.end() ? nullptr : &clusters_[it->second];
  }
  /// Nodes run by another node's step (read in place, or in a cluster that
  /// runs elsewhere); epilogues are decided as kernels are built.
  bool runElsewhere(const Node *n) const { return runElsewhere_.count(n) && !clusterAt_.count(n); }

private:
  /// The bf16 widening `v` is, directly or through a Transpose read in place.
  const Node *widening(const Value *v) const;
  const Graph &g_;
  DeviceType device_;
  llvm::DenseSet<const Node *> readInPlace_, runElsewhere_;
  llvm::DenseSet<const Node *> halfOperands_; // matmuls reading both operands' half inputs
  std::vector<ElementwiseCluster> clusters_;
  llvm::DenseMap<const Node *, size_t> clusterAt_;
};

} // namespace partita::rt
