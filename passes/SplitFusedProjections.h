//===- SplitFusedProjections.h ---------------------------------------------===//
#pragma once
#include "compiler/ir/Graph.h"

namespace partita {

/// See SplitFusedProjections.cpp; annotate-megatron runs it first.
void splitFusedProjections(Graph &g);

} // namespace partita
