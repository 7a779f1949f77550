//===- CommonSubexpression.cpp - cse pass ---------------------------------===//
//
// Merges nodes that compute the same thing: same op, same operands, same
// attributes (Constants compare by content, so duplicate constants merge).
// Weights are distinct parameters even when equal and are never merged.
//===----------------------------------------------------------------------===//
#include "compiler/ops/OpRegistry.h"
#include "passes/Passes.h"
#include "llvm/ADT/Hashing.h"
#include <unordered_map>

namespace partita {

namespace {
size_t nodeHash(const Node &n) {
  size_t h = llvm::hash_combine(n.op(), n.domain(), n.numOutputs());
  for (const Value *v : n.inputs())
    h = llvm::hash_combine(h, v);
  for (const auto &[k, a] : n.attrs())
    h = llvm::hash_combine(h, k, static_cast<int>(a.kind),
                           a.kind == Attribute::TensorValue ? a.tensor.hash() : 0);
  return h;
}

bool equivalent(const Node &a, const Node &b) {
  return a.op() == b.op() && a.domain() == b.domain() && a.inputs() == b.inputs() &&
         a.numOutputs() == b.numOutputs() && a.attrs() == b.attrs();
}

class CommonSubexpression : public Pass {
public:
  llvm::StringRef name() const override { return "cse"; }
  llvm::Error run(Graph &g) override {
    std::unordered_multimap<size_t, Node *> seen;
    for (Node *n : g.nodes()) {
      if (n->is("Weight") || hasTrait(*n, OpTrait::SideEffects)) // distinct parameters; distinct messages
        continue;
      size_t h = nodeHash(*n);
      Node *twin = nullptr;
      auto range = seen.equal_range(h);
      for (auto it = range.first; it != range.second && !twin; ++it)
        if (equivalent(*it->second, *n))
          twin = it->second;
      if (!twin) {
        seen.emplace(h, n);
        continue;
      }
      bool keepsOutputNames = true;
      for (Value *out : n->outputs())
        keepsOutputNames &= !(g.isGraphOutput(out) && g.isGraphOutput(twin->output(out->resultIndex())));
      if (!keepsOutputNames)
        continue; // two graph outputs must stay two values
      for (Value *out : n->outputs())
        g.replaceAllUsesWith(out, twin->output(out->resultIndex()), g.isGraphOutput(out));
      g.eraseNode(n);
    }
    return llvm::Error::success();
  }
};
} // namespace

PassInfo commonSubexpressionPass() {
  return {"cse", "Merge identical nodes and identical constants",
          "Replaces a node by an earlier node with the same op, operands and attributes.",
          [] { return std::make_unique<CommonSubexpression>(); }};
}

} // namespace partita
