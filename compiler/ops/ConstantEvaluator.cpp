//===- ConstantEvaluator.cpp ----------------------------------------------===//
#include "compiler/ops/ConstantEvaluator.h"
#include "compiler/ops/OpRegistry.h"
#include <limits>

namespace partita {

const Tensor *ConstantEvaluator::valueOf(const Value *v) const {
  if (const Tensor *t = constantValue(v))
    return t;
  auto it = known_.find(v);
  return it == known_.end() ? nullptr : &it->second;
}

llvm::Expected<bool> ConstantEvaluator::tryEvaluate(const Node &n) {
  if (n.is("Constant"))
    return true;
  const OpInfo *info = OpRegistry::get().find(n.qualifiedOp());
  if (!info || !info->eval)
    return false;
  for (Value *out : n.outputs())
    if (!out->type().isStatic() || out->type().numel() > maxElements_)
      return false;
  std::vector<Tensor> inputs;
  // Shape and Size read only their input's (static) type.
  bool typeOnly = info->has(OpTrait::ShapeOnly);
  for (Value *in : n.inputs()) {
    if (!in)
      continue;
    if (typeOnly) {
      if (!in->type().isStatic())
        return false;
      inputs.emplace_back(in->type().dtype, in->type().shape, nullptr);
      continue;
    }
    const Tensor *t = valueOf(in);
    if (!t)
      return false;
    inputs.push_back(*t);
  }
  auto results = evaluateNode(n, inputs);
  if (!results)
    return results.takeError();
  for (size_t i = 0; i < n.numOutputs() && i < results->size(); ++i)
    known_[n.output(i)] = (*results)[i];
  return true;
}

llvm::Error inferGraph(Graph &g) {
  ConstantEvaluator eval;
  auto lookup = [&](const Value *v) { return eval.valueOf(v); };
  for (Node *n : g.nodes()) {
    if (auto err = inferNode(*n, g.opset, lookup))
      return err;
    for (const Value *out : n->outputs()) // nothing can hold or index such a tensor
      if (out->type().isStatic() && out->type().numel() == std::numeric_limits<int64_t>::max())
        return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                       "node " + n->describe() + ": output " + out->name() + " " + out->type().str() +
                                           " has more elements than 64 bits count");
    auto done = eval.tryEvaluate(*n);
    if (!done)
      return done.takeError();
  }
  return llvm::Error::success();
}

} // namespace partita
