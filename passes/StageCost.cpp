//===- StageCost.cpp ------------------------------------------------------===//
#include "passes/StageCost.h"

namespace partita {

namespace {

double bytesOf(const Value *v) {
  return v ? static_cast<double>(v->type().numel()) * static_cast<double>(dtypeSize(v->type().dtype)) : 0;
}

bool isWeight(const Value *v) { return v && v->definingNode() && v->definingNode()->is("Weight"); }

/// Ops whose backward reads none of their operands (sums, moves, casts).
bool linearInOperands(const Node &n) {
  for (const char *op : {"Add", "Sub", "Neg", "Reshape", "Transpose", "Squeeze", "Unsqueeze", "Flatten", "Concat",
                         "Split", "Slice", "Gather", "Expand", "Identity", "Cast", "ReduceSum", "ReduceMean", "Shape"})
    if (n.is(op))
      return true;
  return false;
}

} // namespace

NodeCost forwardCost(const Node &n, llvm::DenseSet<const Value *> &seen) {
  NodeCost c;
  double written = 0;
  for (const Value *v : n.outputs()) {
    written += static_cast<double>(v->type().numel());
    c.bytes += bytesOf(v);
  }
  c.flops = written;
  const Value *a = n.input(0);
  if (a && a->type().rank() > 0) {
    const Shape &s = a->type().shape;
    if (n.is("MatMul") || n.is("Linear", "partita"))
      c.flops = 2 * written * static_cast<double>(s.back());
    else if (n.is("Gemm") && s.size() == 2)
      c.flops = 2 * written * static_cast<double>(n.intAttr("transA", 0) ? s[0] : s[1]);
  }
  for (size_t i = 0; i < n.numInputs(); ++i) {
    const Value *in = n.input(i);
    if (!in)
      continue;
    bool lookup = n.is("Gather") && i == 0; // reads the rows it writes
    c.bytes += lookup ? bytesOf(n.output()) : bytesOf(in);
    if (isWeight(in)) {
      if (seen.insert(in).second)
        c.parameters += bytesOf(in);
    } else if (!linearInOperands(n) && isFloat(in->type().dtype)) {
      c.stashed += bytesOf(in);
    }
  }
  return c;
}

} // namespace partita
