//===- Canonicalize.cpp - canonicalize pipeline pass ----------------------===//
//
// Turns what torch.onnx.export emits, under any export options, into the small
// canonical graph every later pass expects: shapes folded, identities gone,
// LayerNorm / GELU / Linear recognised, duplicates merged, dead code removed.
// The dynamic-batch export of a model canonicalizes to the same graph as its
// static export.
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"
#include "llvm/ADT/DenseSet.h"
#include <algorithm>

namespace partita {

namespace {

/// A node order that depends only on the graph's structure: weights first (in
/// order of first use), then a post-order walk from the outputs, operands left
/// to right. Exports that differ only in node order print identically.
std::vector<Node *> structuralOrder(const Graph &g) {
  std::vector<Node *> order;
  llvm::DenseSet<const Node *> visited;
  std::vector<std::pair<Node *, size_t>> stack; // node, next operand to visit
  auto push = [&](Value *v) {
    Node *n = v ? v->definingNode() : nullptr;
    if (n && visited.insert(n).second)
      stack.push_back({n, 0});
  };
  for (Value *out : g.outputs()) {
    push(out);
    while (!stack.empty()) {
      auto &[n, next] = stack.back();
      if (next < n->numInputs()) {
        push(n->input(next++));
        continue;
      }
      order.push_back(n);
      stack.pop_back();
    }
  }
  std::stable_partition(order.begin(), order.end(), [](Node *n) { return n->is("Weight"); });
  return order;
}

class Canonicalize : public Pass {
public:
  llvm::StringRef name() const override { return "canonicalize"; }
  llvm::Error run(Graph &g) override {
    PassManager pm;
    // Folding first: the fusions match literal constants (√2, ε, 0.5).
    if (auto err = pm.addPipeline("fold-constants,remove-identity,cse,dce,fuse-layernorm,"
                                  "fuse-gelu,fuse-linear,cse,dce"))
      return err;
    if (auto err = pm.run(g))
      return err;
    g.setOrder(structuralOrder(g));
    return llvm::Error::success();
  }
};
} // namespace

PassInfo canonicalizePass() {
  return {"canonicalize", "The canonicalization pipeline",
          "fold-constants, remove-identity, cse, dce, fuse-layernorm, fuse-gelu, fuse-linear, "
          "cse, dce.",
          [] { return std::make_unique<Canonicalize>(); }};
}

} // namespace partita
