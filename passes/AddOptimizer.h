//===- AddOptimizer.h - AdamW's options and the optimizer programs' IO ----===//
//
// add-optimizer (passes/AddOptimizer.cpp) appends torch.optim.AdamW to the
// global training graph, one partita.AdamW node per trained weight
// (compiler/ops/OptimizerOps.cpp defines it):
//   p ← p·(1 − lr·wd);  m ← β1·m + (1−β1)·g;  v ← β2·v + (1−β2)·g²
//   p ← p − (lr / bc1) · m / (√v / √bc2 + ε)      bc1 = 1−β1ᵗ, bc2 = 1−β2ᵗ
// and the global L2 norm of the gradients that clipping needs. Its nodes are
// tagged with the program they belong to (`program` attribute: "step" or
// "grad_norm"); split-programs cuts the graph into them. The names below are
// the contract between the compiler and the runtime's training loop.
//===----------------------------------------------------------------------===//
#pragma once
#include "compiler/pass/PassManager.h"
#include "compiler/plan/AdamWOptions.h"
#include "compiler/plan/Names.h"
#include <cmath>
#include <memory>
#include <string>

namespace partita {

/// The optimizer programs' names and IO (compiler/plan/Names.h), and which
/// program a node belongs to.
namespace optimizer_io {
/// A node of the forward program (no program tag; not a weight or constant,
/// which go wherever they are read) and of the backward.
inline bool inForward(const Node &n) {
  return !n.is("Weight") && !n.is("Constant") && n.stringAttr(kProgramAttr, "").empty();
}
inline bool inBackward(const Node &n) { return n.stringAttr(kProgramAttr, "") == kBackward; }

/// Whether graph input `in` is read only by the optimizer's nodes (its state
/// and scalars: no batch, and no input of the forward program).
inline bool readOnlyByOptimizer(const Value &in) {
  for (const Node *u : in.users()) {
    std::string p = u->stringAttr(kProgramAttr, "");
    if (p != kStep && p != kGradNorm)
      return false;
  }
  return in.hasUsers();
}
} // namespace optimizer_io

/// The add-optimizer pass with `options` (partita-opt sets them as pass options).
std::unique_ptr<Pass> createAddOptimizer(const AdamWOptions &options);

} // namespace partita
