//===- OpRegistry.cpp -----------------------------------------------------===//
#include "compiler/ops/OpRegistry.h"
#include <algorithm>

namespace partita {

llvm::Error InferContext::error(const llvm::Twine &msg) const {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 "node " + node.describe(opset) + ": " + msg);
}

const OpRegistry &OpRegistry::get() {
  static const OpRegistry registry = [] {
    OpRegistry r;
    registerElementwiseOps(r);
    registerShapeOps(r);
    registerReductionOps(r);
    registerNNOps(r);
    registerCommOps(r);
    registerEinsumOp(r);
    registerConvOp(r);
    registerOptimizerOps(r);
    registerEmbeddingGradOp(r);
    registerFlatShardsOps(r);
    return r;
  }();
  return registry;
}

const OpInfo *OpRegistry::find(llvm::StringRef qualifiedOp) const {
  auto it = ops_.find(qualifiedOp);
  return it == ops_.end() ? nullptr : &it->second;
}

std::vector<std::string> OpRegistry::names() const {
  std::vector<std::string> out;
  for (const auto &e : ops_)
    out.push_back(e.getKey().str());
  std::sort(out.begin(), out.end());
  return out;
}

bool hasTrait(const Node &n, OpTrait t) {
  const OpInfo *info = OpRegistry::get().find(n.qualifiedOp());
  return info && info->has(t);
}

int64_t normalizeAxis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank)
    return -1;
  return axis < 0 ? axis + rank : axis;
}

std::vector<int64_t> transposePerm(const Node &n) {
  std::vector<int64_t> perm = n.intsAttr("perm");
  if (perm.empty() && n.input(0))
    for (int64_t i = n.input(0)->type().rank() - 1; i >= 0; --i)
      perm.push_back(i);
  return perm;
}

llvm::Error inferNode(Node &n, int64_t opset,
                      const std::function<const Tensor *(const Value *)> &knownValue) {
  const OpInfo *info = OpRegistry::get().find(n.qualifiedOp());
  InferContext ctx{n, {}, {}, opset};
  if (!info)
    return ctx.error("operator is not supported by Partita");
  int count = static_cast<int>(n.numInputs());
  if (count < info->minInputs || (info->maxInputs >= 0 && count > info->maxInputs))
    return ctx.error("expects " + llvm::Twine(info->minInputs) +
                     (info->maxInputs == info->minInputs
                          ? llvm::Twine("")
                          : (info->maxInputs < 0 ? llvm::Twine(" or more")
                                                 : " to " + llvm::Twine(info->maxInputs))) +
                     (info->maxInputs == 1 ? " input" : " inputs") + ", got " + llvm::Twine(count));
  for (Value *v : n.inputs()) {
    if (v && !v->type().known)
      return ctx.error("input %" + v->name() + " has no inferred type");
    ctx.types.push_back(v ? &v->type() : nullptr);
    ctx.values.push_back(v ? knownValue(v) : nullptr);
  }
  std::vector<TensorType> outs;
  if (auto err = info->infer(ctx, outs))
    return err;
  if (outs.size() < n.numOutputs())
    return ctx.error("produces " + llvm::Twine(outs.size()) + " results, the node has " +
                     llvm::Twine(n.numOutputs()));
  // From static operands a rule can still compute a negative size (a shape
  // operand that folds to a negative number): name it rather than let it pass
  // as a dynamic dimension.
  bool staticOperands = std::all_of(n.inputs().begin(), n.inputs().end(),
                                    [](const Value *v) { return !v || v->type().isStatic(); });
  for (size_t i = 0; i < n.numOutputs() && staticOperands; ++i)
    for (size_t d = 0; d < outs[i].shape.size(); ++d)
      if (outs[i].shape[d] < 0) {
        std::string dims;
        for (int64_t x : outs[i].shape)
          dims += (dims.empty() ? "" : ",") + std::to_string(x);
        return ctx.error("result %" + n.output(i)->name() + " would have negative dimension " +
                         llvm::Twine(outs[i].shape[d]) + " (dimension " + llvm::Twine(d) + " of [" + dims + "])");
      }
  for (size_t i = 0; i < n.numOutputs(); ++i) {
    outs[i].known = true;
    n.output(i)->type() = outs[i];
  }
  return llvm::Error::success();
}

llvm::Expected<std::vector<Tensor>> evaluateNode(const Node &n, llvm::ArrayRef<Tensor> inputs) {
  const OpInfo *info = OpRegistry::get().find(n.qualifiedOp());
  if (!info || !info->eval)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "node " + n.describe() + ": cannot be evaluated at compile time");
  return info->eval(n, inputs);
}

} // namespace partita
