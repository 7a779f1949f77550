//===- Verifier.h - structural and type checks of a Graph -----------------===//
#pragma once
#include "compiler/ir/Graph.h"
#include "llvm/Support/Error.h"

namespace partita {

/// Checks that the graph is well formed: SSA in program order, every op
/// registered, every type static and equal to what inference derives, every
/// weight declared, every sharding valid for the mesh. The first problem is
/// returned as an error naming the node or value.
llvm::Error verifyGraph(const Graph &g);

} // namespace partita
