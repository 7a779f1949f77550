//===- SplitPrograms.h - cut a global graph into named programs ------------===//
//
// A node belongs to the program its `program` attribute names
// (optimizer_io::kProgramAttr; add-optimizer tags its nodes), or, untagged,
// to that of the first input made by a tagged program's node (a collective
// the planner placed for it), else to "forward". Programs meet only through
// graph inputs, outputs and weights: a weight another program reads becomes
// an input of that program of the same name, type and sharding (the runtime
// binds it to the forward program's buffer); a constant is copied into each
// program that reads it; any other value made in one program and read in
// another is an error naming it.
//===----------------------------------------------------------------------===//
#pragma once
#include "compiler/ir/Graph.h"
#include "llvm/Support/Error.h"
#include <memory>

namespace partita {

struct NamedProgram {
  std::string name;
  std::unique_ptr<Graph> graph;
};

/// "forward" first, then the others in the order their first node appears.
llvm::Expected<std::vector<NamedProgram>> splitPrograms(const Graph &g);

} // namespace partita
