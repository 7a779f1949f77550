//===- SplitPrograms.h - cut a global graph into named programs ------------===//
//
// A node belongs to the program its `program` attribute names
// (optimizer_io::kProgramAttr: autodiff tags the backward, add-optimizer the
// step and grad_norm), or, untagged, to that of the first input made by a
// tagged program's node (a collective the planner placed for it), else to
// "forward". Programs meet through graph inputs, outputs and weights: a
// weight the backward or the step reads becomes an input of that program of
// the same name, type and sharding (the runtime binds it to the forward
// program's buffer), unless the forward does not read it: then it is the
// step's own (mixed precision's master copies); a constant is copied into
// each program that reads it. The one
// other edge allowed is forward -> backward: an activation the backward
// reads is saved, an output of the forward and an input of the backward of
// the same name (what a schedule keeps between a micro-batch's forward and
// its backward). Any other value made in one program and read in another is
// an error naming it.
//===----------------------------------------------------------------------===//
#pragma once
#include "compiler/plan/Names.h"
#include "compiler/ir/Graph.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/Error.h"
#include <memory>

namespace partita {

struct NamedProgram {
  std::string name;
  std::unique_ptr<Graph> graph;
};

struct ProgramSplit {
  /// "forward" first, then the others in the order their first node appears.
  std::vector<NamedProgram> programs;
  /// The activations the forward saves for the backward, in the order the
  /// forward makes them (appended to its outputs).
  std::vector<std::string> saved;
};

/// The program of every node but weights and constants (which go wherever
/// they are read), by the rule above.
llvm::DenseMap<const Node *, std::string> assignPrograms(const Graph &g, bool separateBackward = true);

/// With `separateBackward` false the backward's nodes stay in the forward
/// program (one program returning the loss and the gradients).
llvm::Expected<ProgramSplit> splitPrograms(const Graph &g, bool separateBackward = true);

} // namespace partita
