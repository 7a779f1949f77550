//===- TieEmbeddings.h - the heads tie-embeddings tied to a table --------===//
#pragma once
#include "compiler/ir/Graph.h"
#include <string>
#include <vector>

namespace partita {

/// The initializers of the heads the tie-embeddings pass tied to the
/// embedding table `table` (its attribute `tied`, comma-separated), in the
/// order they were tied; empty for any other weight.
std::vector<std::string> tiedHeadNames(const Node &table);

} // namespace partita
