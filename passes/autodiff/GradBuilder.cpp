//===- GradBuilder.cpp ----------------------------------------------------===//
#include "passes/autodiff/GradBuilder.h"
#include "compiler/ops/OpRegistry.h"

namespace partita {

Value *GradBuilder::op(llvm::StringRef op, llvm::ArrayRef<Value *> inputs,
                       const std::map<std::string, Attribute> &attrs, llvm::StringRef domain) {
  // A transpose of a transpose is one transpose of the original (or none):
  // the backward pass transposes what the forward pass transposed.
  if (op == "Transpose" && domain.empty() && inputs.size() == 1 && inputs[0]->definingNode() &&
      inputs[0]->definingNode()->is("Transpose") && attrs.count("perm")) {
    const Node &inner = *inputs[0]->definingNode();
    std::vector<int64_t> first = transposePerm(inner), second = attrs.at("perm").ints, composed;
    for (int64_t d : second)
      composed.push_back(first[d]);
    bool identity = true;
    for (size_t i = 0; i < composed.size(); ++i)
      identity &= composed[i] == static_cast<int64_t>(i);
    if (identity)
      return inner.input(0);
    return this->op("Transpose", {inner.input(0)}, {{"perm", Attribute::ofInts(composed)}});
  }
  Node *n = g_.createNode(op, inputs, {prefix_ + std::to_string(counter_++)}, domain);
  for (const auto &[k, a] : attrs)
    n->setAttr(k, a);
  if (auto err = inferNode(*n, g_.opset, [](const Value *v) { return constantValue(v); }))
    if (error_.empty())
      error_ = llvm::toString(std::move(err));
  return n->output();
}

Value *GradBuilder::scalar(double v, DType t) {
  return g_.createConstant(Tensor::fromDoubles(t, {}, {v}), prefix_ + "c" + std::to_string(counter_++));
}

Value *GradBuilder::ints(llvm::ArrayRef<int64_t> v) {
  return g_.createConstant(Tensor::fromInts(DType::I64, {static_cast<int64_t>(v.size())}, v),
                           prefix_ + "i" + std::to_string(counter_++));
}

Value *GradBuilder::zeros(const TensorType &t) {
  return g_.createConstant(Tensor::zeros(t.dtype, t.shape), prefix_ + "z" + std::to_string(counter_++));
}

Value *GradBuilder::reshape(Value *v, const Shape &shape) {
  if (v->type().shape == shape)
    return v;
  return op("Reshape", {v, ints(std::vector<int64_t>(shape.begin(), shape.end()))});
}

Value *GradBuilder::sumTo(Value *grad, const Shape &target) {
  const Shape &s = grad->type().shape;
  if (s == target)
    return grad;
  int64_t lead = static_cast<int64_t>(s.size()) - static_cast<int64_t>(target.size());
  std::vector<int64_t> axes;
  for (int64_t d = 0; d < static_cast<int64_t>(s.size()); ++d)
    if (d < lead || (target[d - lead] == 1 && s[d] != 1))
      axes.push_back(d);
  Value *summed = axes.empty() ? grad : op("ReduceSum", {grad, ints(axes)}, {{"keepdims", Attribute::ofInt(1)}});
  return reshape(summed, target);
}

Value *GradBuilder::transposeLast(Value *v) {
  int64_t r = v->type().rank();
  std::vector<int64_t> perm;
  for (int64_t i = 0; i < r; ++i)
    perm.push_back(i);
  std::swap(perm[r - 1], perm[r - 2]);
  return op("Transpose", {v}, {{"perm", Attribute::ofInts(perm)}});
}

const GradFn *findGradRule(const Node &n) {
  static const std::map<std::string, GradFn> table = [] {
    std::map<std::string, GradFn> t;
    addElementwiseGrads(t);
    addLinearAlgebraGrads(t);
    addNormGrads(t);
    addShapeGrads(t);
    return t;
  }();
  auto it = table.find(n.qualifiedOp());
  return it == table.end() ? nullptr : &it->second;
}

} // namespace partita
