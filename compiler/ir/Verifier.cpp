//===- Verifier.cpp -------------------------------------------------------===//
#include "compiler/ir/Verifier.h"
#include "compiler/ops/ConstantEvaluator.h"
#include "compiler/ops/OpRegistry.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLFunctionalExtras.h"

namespace partita {

namespace {
llvm::Error fail(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "verifier: " + msg);
}

/// `where` names the place in an error only (it is made only then).
llvm::Error checkValue(const Graph &g, const Value *v, llvm::function_ref<std::string()> where) {
  const Shape &shape = v->type().shape;
  for (size_t d = 0; v->type().known && d < shape.size(); ++d)
    if (shape[d] < 0 && shape[d] != kDynamicDim) {
      std::string dims;
      for (int64_t x : shape)
        dims += (dims.empty() ? "" : ",") + std::to_string(x);
      return fail(where() + ": value %" + v->name() + " has negative dimension " + llvm::Twine(shape[d]) +
                  " (dimension " + llvm::Twine(d) + " of [" + dims + "])");
    }
  if (!v->type().isStatic())
    return fail(where() + ": value %" + v->name() + " has non-static type " + v->type().str());
  if (v->sharding() && !g.mesh.empty()) {
    if (auto err = v->sharding()->verify(g.mesh, v->type().shape))
      return fail(where() + ": value %" + v->name() + ": " + llvm::toString(std::move(err)));
  } else if (v->sharding() && !v->sharding()->isReplicated()) {
    return fail(where() + ": value %" + v->name() + " is sharded but the graph has no mesh");
  } else if (v->sharding() && v->sharding()->dims.size() != v->type().shape.size()) {
    return fail(where() + ": value %" + v->name() + " has a sharding of the wrong rank");
  }
  return llvm::Error::success();
}
} // namespace

llvm::Error verifyGraph(const Graph &g) {
  llvm::DenseSet<const Value *> defined;
  for (const Value *in : g.inputs()) {
    if (auto err = checkValue(g, in, [] { return std::string("graph input"); }))
      return err;
    defined.insert(in);
  }
  ConstantEvaluator eval;
  auto lookup = [&](const Value *v) { return eval.valueOf(v); };
  for (Node *n : g.nodes()) {
    auto where = [&] { return "node " + n->describe(); }; // for an error only
    for (const Value *in : n->inputs())
      if (in && !defined.count(in))
        return fail(where() + ": operand %" + in->name() + " is not defined before its use");
    if (n->is("Weight")) {
      const WeightRef *ref = g.weights.find(n->stringAttr("name", ""));
      if (!ref)
        return fail(where() + ": weight '" + n->stringAttr("name", "") + "' is not declared");
      if (ref->heldType().dtype != n->output()->type().dtype || ref->type.shape != n->output()->type().shape)
        return fail(where() + ": weight type " + ref->heldType().str() + " differs from " +
                    n->output()->type().str());
    }
    std::vector<TensorType> recorded;
    for (Value *out : n->outputs())
      recorded.push_back(out->type());
    // Re-derive the result types; Node is mutated only transiently.
    Node &mut = const_cast<Node &>(*n);
    llvm::Error err = inferNode(mut, g.opset, lookup);
    std::vector<TensorType> derived;
    for (size_t i = 0; i < n->numOutputs(); ++i) {
      derived.push_back(n->output(i)->type());
      mut.output(i)->type() = recorded[i];
    }
    if (err)
      return fail(llvm::toString(std::move(err)));
    for (size_t i = 0; i < n->numOutputs(); ++i) {
      if (derived[i] != recorded[i])
        return fail(where() + ": result %" + n->output(i)->name() + " is declared " +
                    recorded[i].str() + " but inference gives " + derived[i].str());
      if (auto e = checkValue(g, n->output(i), where))
        return e;
      defined.insert(n->output(i));
    }
    auto done = eval.tryEvaluate(*n);
    if (!done)
      return fail(llvm::toString(done.takeError()));
  }
  for (const Value *out : g.outputs())
    if (!defined.count(out))
      return fail("graph output %" + out->name() + " is not defined");
  if (g.outputs().empty())
    return fail("graph has no outputs");
  return llvm::Error::success();
}

} // namespace partita
