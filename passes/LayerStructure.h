//===- LayerStructure.h - a model's layers from its dataflow ---------------===//
//
// For a model whose node and weight names do not number its layers
// (LayerNames.h: an exporter other than torch.onnx, a hand-built graph), the
// layers as the dataflow shows them. A transformer carries its activations
// from block to block in one tensor, the residual stream: between two blocks
// it is the only value computed from the trainable weights that the rest of
// the forward still reads. So:
//
//   1. The carried values are those computed from a trainable weight (masks,
//      positions and frozen tables derived from inputs and constants are not:
//      every block reads them, and nothing needs to carry them).
//   2. In the forward's order, a cut follows each node after which exactly
//      one carried value is still to be read. The carried nodes between two
//      cuts form a segment (a transformer layer's attention half, its MLP
//      half; a parallel block's whole layer).
//   3. A layer is the unit the segments repeat in: the smallest period p
//      (1 to 8 segments) whose repetition (segment i's op sequence equal to
//      segment i + p's) covers the longest run of segments, at least two
//      periods of it. The run's periods are the layers; the segments before
//      it (the embedding) and after it (the final norm, the head, the loss)
//      belong to none.
//
// A forward with fewer than two repeating periods has no layers by structure.
//===----------------------------------------------------------------------===//
#pragma once
#include "compiler/ir/Graph.h"
#include "llvm/ADT/ArrayRef.h"
#include <vector>

namespace partita {

/// `forward`'s layers (each its carried nodes, in order), found as above;
/// `forward` is the forward's nodes in a topological order (no weights or
/// constants needed: they are read through the nodes' operands).
std::vector<std::vector<const Node *>> layersByStructure(llvm::ArrayRef<const Node *> forward);

} // namespace partita
