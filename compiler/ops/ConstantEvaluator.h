//===- ConstantEvaluator.h - values known at compile time -----------------===//
//
// Tracks the values of a graph that are compile-time constants: Constant
// nodes, Shape/Size of statically shaped values, and every foldable node whose
// inputs are known, up to a size limit (shape computations are small; large
// folded tensors would bloat the IR). Shape inference uses it to see through
// the Shape→Gather→Concat→Reshape chains that torch exports; fold-constants
// uses it to rewrite those chains into Constants.
//
//===----------------------------------------------------------------------===//
#pragma once
#include "compiler/ir/Graph.h"
#include "llvm/ADT/DenseMap.h"

namespace partita {

class ConstantEvaluator {
public:
  explicit ConstantEvaluator(int64_t maxElements = 1 << 16) : maxElements_(maxElements) {}

  /// The value of `v` if known, else nullptr.
  const Tensor *valueOf(const Value *v) const;
  /// Evaluates `n` when it is foldable and all it needs is known; records its
  /// results. Returns true if it did. Evaluation errors (e.g. an out-of-range
  /// index) are returned, not swallowed.
  llvm::Expected<bool> tryEvaluate(const Node &n);

private:
  int64_t maxElements_;
  llvm::DenseMap<const Value *, Tensor> known_;
};

/// Infers the type of every node in program order (graph inputs must be
/// typed), seeing through constant shape computations.
llvm::Error inferGraph(Graph &g);

} // namespace partita
