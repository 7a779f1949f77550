//===- PatternMatch.cpp ---------------------------------------------------===//
#include "passes/PatternMatch.h"
#include <algorithm>
#include <cmath>

namespace partita {

std::optional<double> scalarConstant(const Value *v) {
  const Tensor *t = constantValue(v);
  if (!t || t->numel() != 1)
    return std::nullopt;
  return t->at(0);
}

bool isScalar(const Value *v, double expected, double relTol) {
  auto c = scalarConstant(v);
  return c && std::fabs(*c - expected) <= relTol * std::max(1.0, std::fabs(expected));
}

Node *definedBy(const Value *v, llvm::StringRef op) {
  Node *n = v ? v->definingNode() : nullptr;
  return n && n->is(op) ? n : nullptr;
}

Node *singleUser(const Graph &g, const Value *v) {
  if (v->users().size() != 1 || g.isGraphOutput(v))
    return nullptr;
  return v->users()[0];
}

Value *otherOperand(const Node *n, const Value *known) {
  if (n->numInputs() != 2)
    return nullptr;
  if (n->input(0) == known)
    return n->input(1);
  if (n->input(1) == known)
    return n->input(0);
  return nullptr;
}

Value *operandBesideScalar(const Node *n, double c, double relTol) {
  if (n->numInputs() != 2)
    return nullptr;
  if (isScalar(n->input(1), c, relTol))
    return n->input(0);
  if (isScalar(n->input(0), c, relTol))
    return n->input(1);
  return nullptr;
}

Node *projectionWeight(const Node *n) {
  if (!(n->is("Linear", "partita") || n->is("MatMul")))
    return nullptr;
  Node *w = n->input(1) ? n->input(1)->definingNode() : nullptr;
  return w && w->is("Weight") && w->output()->type().rank() == 2 ? w : nullptr;
}

bool onlyUsedBy(const Graph &g, const Value *v, std::initializer_list<const Node *> allowed) {
  if (g.isGraphOutput(v))
    return false;
  return std::all_of(v->users().begin(), v->users().end(), [&](const Node *u) {
    return std::find(allowed.begin(), allowed.end(), u) != allowed.end();
  });
}

} // namespace partita
