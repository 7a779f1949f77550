//===- SplitPipeline.h - cut a staged global graph into one graph per stage ===//
//
// After every other pass, the global training (or inference) graph has a
// stage on the nodes assign-stages placed and on their backward (autodiff);
// the nodes later passes made (collectives, the optimizer's, ZeRO's) take the
// latest stage among their operands' producers, else the earliest among
// their readers', else their weights'. Nodes that read only graph inputs and
// constants are copied into every stage that reads them.
//
// Each stage becomes a graph of its own: a value made on stage a and read on
// stage b is an output of a's graph and an input of b's, of the same name (an
// edge: activations forward, their gradients backward), which the runtime
// sends and receives between its programs; split-programs then cuts each
// stage's graph into its forward, backward, grad_norm and step programs. The
// global graph's grad_norm.stage<s> is stage s's grad_norm output.
//
// Refused, naming the value: a trained weight read on two stages (tied
// embeddings across stages) and a forward graph output made before the last
// stage.
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
};

llvm::Expected<PipelineSplit> splitPipeline(const Graph &g, int64_t stages);

/// The stage of every node but weights and constants by the rule above (-1:
/// input-only, on every stage reading it).
llvm::Expected<llvm::DenseMap<const Node *, int64_t>> pipelineStages(const Graph &g, int64_t stages);
/// Writes that stage on the nodes without one (no-op without stages): for
/// passes that need a weight's stage after others rewrote its readers.
llvm::Error tagPipelineStages(Graph &g);

} // namespace partita
