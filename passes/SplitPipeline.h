//===- SplitPipeline.h - cut a staged global graph into one graph per stage ===//
//
// After every other pass, the global training (or inference) graph has a
// stage on the nodes assign-stages placed and on their backward (autodiff);
// the nodes later passes made (collectives, the optimizer's, ZeRO's) take the
// latest stage among their operands' producers. Nodes that read only graph
// inputs, constants and weights (position ids, ZeRO-3's gathers) are copied
// into every stage that reads them; one read by none (an output) takes the
// stage of its weights' readers.
//
// Each stage becomes a graph of its own: a value made on stage a and read on
// stage b (an edge: activations forward, their gradients backward) is sent by
// a partita.Send right after a makes it (its token an output of a's graph, so
// it stays) and received by a partita.Recv on b (the value's name, type and
// sharding), in the program of its first reader there. With tp, a value every
// tp rank holds whole goes as each tp rank's 1/tp of its last dimension that
// divides, all-gathered over tp on arrival (Megatron's scatter-gather); a value
// already split over tp (sequence parallelism) goes as each rank's shard. Edge i's message tag is i. Receives come
// first in each stage's order: the runtime posts them when the program starts
// and waits right before the first reader. split-programs then cuts each
// stage's graph into its forward, backward, grad_norm and step programs. The
// global graph's grad_norm.stage<s> is stage s's grad_norm output.
//
// A trained weight several stages read (an embedding tied to the LM head:
// the first and the last) has a copy per later stage (copy-shared-weights);
// `weights` pairs each copy's stage with its weight's, whose gradients the
// runtime sums before the step.
//
// Refused, naming the value: a forward graph output made before the last
// stage; a trained weight read on several stages without copies.
//===----------------------------------------------------------------------===//
#pragma once
#include "compiler/ir/Graph.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/Error.h"
#include <memory>
#include <vector>

namespace partita {

/// A value made on stage `from` and read on stage `to`.
struct PipelineEdge {
  std::string value;
  int64_t from = 0, to = 0;
};

struct PipelineSplit {
  std::vector<std::unique_ptr<Graph>> stages;
  /// Every edge once; its index is its message tag.
  std::vector<PipelineEdge> edges;
  /// Trained weights stage `from` holds and stage `to` holds a copy of
  /// (Plan::pipelineWeights).
  std::vector<PipelineEdge> weights;
};

llvm::Expected<PipelineSplit> splitPipeline(const Graph &g, int64_t stages);

/// The stage of every node but weights and constants by the rule above (-1:
/// input-only, on every stage reading it).
llvm::Expected<llvm::DenseMap<const Node *, int64_t>> pipelineStages(const Graph &g, int64_t stages);
/// Writes that stage on the nodes without one (no-op without stages): for
/// passes that need a weight's stage after others rewrote its readers.
llvm::Error tagPipelineStages(Graph &g);

} // namespace partita
