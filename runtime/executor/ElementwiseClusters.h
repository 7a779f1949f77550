//===- ElementwiseClusters.h - groups of elementwise nodes run as one -----===//
//
// Chains of elementwise ops (the backward of GELU or LayerNorm is a dozen of
// them) each read and write whole tensors; a device that can run a group of
// them in one pass keeps the intermediates in registers or cache. A cluster
// is a set of fusible nodes with one output shape, connected through their
// operands, that can run as one step at the position of its last node: every
// value it produces that something outside reads (or a graph output) is
// written out, every other value never leaves the cluster.
//
//===----------------------------------------------------------------------===//
#pragma once
#include "runtime/kernels/Kernel.h"
#include "llvm/ADT/DenseSet.h"
#include <functional>
#include <vector>

namespace partita::rt {

/// Clusters of at least two nodes among those `fusible` accepts, skipping
/// `excluded` ones (already fused elsewhere).
std::vector<ElementwiseCluster> formElementwiseClusters(const Graph &g,
                                                        const std::function<bool(const Node &)> &fusible,
                                                        const llvm::DenseSet<const Node *> &excluded);

} // namespace partita::rt
