//===- ProgramTime.cpp ----------------------------------------------------===//
#include "planner/ProgramTime.h"
#include "planner/MemoryPrediction.h"
#include "passes/StageCost.h"

namespace partita::planner {

AxisLinks::AxisLinks(const Mesh &mesh, const Machine &machine) : machine_(machine) {
  int64_t stride = 1; // ranks between neighbours on an axis: the sizes of the axes inside it
  for (auto it = mesh.axes.rbegin(); it != mesh.axes.rend(); ++it) {
    const int64_t span = stride * it->size;
    axes_[it->name] = {it->size, span <= machine.devicesPerNode && machine.devicesPerNode % span == 0};
    stride = span;
  }
}

const Link &AxisLinks::link(llvm::StringRef axis) const { return withinNode(axis) ? machine_.intraNode : machine_.interNode; }

bool AxisLinks::withinNode(llvm::StringRef axis) const {
  auto it = axes_.find(axis.str());
  return it == axes_.end() || it->second.second;
}

int64_t AxisLinks::size(llvm::StringRef axis) const {
  auto it = axes_.find(axis.str());
  return it == axes_.end() ? 1 : it->second.first;
}

namespace {
double bytesOf(const Value *v) {
  return v ? static_cast<double>(v->type().numel()) * static_cast<double>(dtypeSize(v->type().dtype)) : 0;
}

bool isFree(const Node &n) {
  for (const char *op : {"Reshape", "Squeeze", "Unsqueeze", "Flatten", "Identity", "Constant", "Weight", "Shape"})
    if (n.is(op))
      return true;
  return n.is("Recv", "partita") || n.is("Send", "partita");
}

/// Ops a fusing runtime runs as one pass with their elementwise neighbours.
bool isElementwise(const Node &n) {
  static const char *ops[] = {"Add", "Sub", "Mul", "Div", "Neg", "Cast", "Where", "Sqrt", "Reciprocal", "Tanh",
                              "Exp", "Log", "Pow", "Relu", "Erf", "Sigmoid", "Abs", "Max", "Min", "Equal", "Less",
                              "Greater", "LessOrEqual", "GreaterOrEqual", "Or", "And", "Not", "Clip"};
  for (const char *op : ops)
    if (n.is(op))
      return true;
  return n.is("FastGelu", "partita") || n.is("Gelu");
}

bool isProduct(const Node &n) { return n.is("MatMul") || n.is("Gemm") || n.is("Linear", "partita"); }

/// Ops that cost a special function (or a division) per element written.
bool isTranscendental(const Node &n) {
  for (const char *op : {"Tanh", "Exp", "Log", "Pow", "Erf", "Sigmoid", "Sqrt", "Reciprocal", "Div", "Gelu"})
    if (n.is(op))
      return true;
  return n.is("FastGelu", "partita") || n.is("AdamW", "partita");
}

/// The seconds of arithmetic a non-product node does: its elements written
/// at the vector rate, or at the transcendental rate (AdamW: a square root
/// and a division per parameter element).
double arithmetic(const Node &n, const NodeCost &c, const Machine &m) {
  if (n.is("AdamW", "partita"))
    return static_cast<double>(n.output(0)->type().numel()) / m.transcendentalFlops + c.flops / m.vectorFlops;
  return c.flops / (isTranscendental(n) ? m.transcendentalFlops : m.vectorFlops);
}

/// The half type `v` was widened from (a Cast of a bf16 or fp16 value, seen
/// through transposes and, where the machine's GEMM reads them as they are,
/// reshapes), or float32's.
DType storedType(const Value *v, bool throughReshapes) {
  const Node *def = v ? v->definingNode() : nullptr;
  while (def && (def->is("Transpose") || (throughReshapes && (def->is("Reshape") || def->is("Squeeze") ||
                                                               def->is("Unsqueeze") || def->is("Flatten")))))
    def = def->input(0)->definingNode();
  if (def && def->is("Cast") && isHalfFloat(def->input(0)->type().dtype))
    return def->input(0)->type().dtype;
  return v ? v->type().dtype : DType::F32;
}

bool isView(const Node &n) {
  return n.is("Reshape") || n.is("Squeeze") || n.is("Unsqueeze") || n.is("Flatten");
}

/// Whether every reader of `v` is a product, seen through transposes (and,
/// with `throughReshapes`, reshapes).
bool onlyProductsRead(const Value *v, bool throughReshapes) {
  if (v->users().empty())
    return false;
  return llvm::all_of(v->users(), [&](const Node *u) {
    if (isProduct(*u))
      return true;
    if (u->is("Transpose") || (throughReshapes && isView(*u)))
      return u->input(0) == v && onlyProductsRead(u->output(), throughReshapes);
    return false;
  });
}

/// A Transpose every reader of which is a product (a GEMM reads it by
/// strides), or of a product's result that nothing else reads (the GEMM
/// writes it through strides), or a widening Cast only products read (a
/// runtime with a half GEMM reads the half operand itself; the CPU's
/// FusionPlan does, directly or through a transpose).
bool readByProducts(const Node &n, bool throughReshapes) {
  if (n.is("Transpose")) {
    const Node *def = n.input(0)->definingNode(); // a product writing its result through strides
    if (def && isProduct(*def) && n.input(0)->users().size() == 1)
      return true;
    return onlyProductsRead(n.output(), false);
  }
  return n.is("Cast") && isHalfFloat(n.input(0)->type().dtype) && onlyProductsRead(n.output(), throughReshapes);
}

/// The dtype a product runs in: half when both operands are stored half.
DType productType(const Node &n, bool throughReshapes) {
  DType a = storedType(n.input(0), throughReshapes);
  DType b = n.numInputs() > 1 ? storedType(n.input(1), throughReshapes) : a;
  return a == b && isHalfFloat(a) ? a : DType::F32;
}
} // namespace

double collectiveTime(const Node &n, const AxisLinks &links) {
  const std::string axis = n.stringAttr("axis", "");
  const double parts = static_cast<double>(n.intAttr("parts", links.size(axis)));
  if (parts < 2)
    return 0;
  const double steps = (n.op() == "AllReduce" ? 2 : 1) * (parts - 1);
  return links.link(axis).time(collectiveBytes(n), steps);
}

ProgramTime programTime(const Graph &g, const Machine &machine, const AxisLinks &links) {
  ProgramTime t;
  const double bandwidth = machine.bandwidth();
  const double overhead = machine.kernelOverhead;
  llvm::DenseSet<const Value *> outputs(g.outputs().begin(), g.outputs().end());
  double computeAtLastSend = -1;
  for (const Node *n : g.nodes()) {
    if (n->domain() == "partita" && n->hasAttr("parts") && !n->is("ShardSlice", "partita")) {
      const double seconds = collectiveTime(*n, links);
      t.collectives[n->stringAttr("axis", "")] += seconds;
      if (n->op() != "AllGather")
        t.reductions[n->stringAttr("axis", "")] += seconds;
      continue;
    }
    if (n->is("Send", "partita")) {
      t.sendBytes += bytesOf(n->input(0));
      computeAtLastSend = t.compute;
    }
    if (isFree(*n) || readByProducts(*n, machine.halfGemmThroughReshapes))
      continue;
    llvm::DenseSet<const Value *> seen;
    NodeCost c = forwardCost(*n, seen);
    if (isProduct(*n)) {
      t.productFlops += c.flops;
      const double seconds = std::max(c.flops / machine.matmulRate(productType(*n, machine.halfGemmThroughReshapes)), c.bytes / bandwidth) + overhead;
      t.compute += seconds;
      t.byOp[n->op()] += seconds;
      ++t.kernels;
      continue;
    }
    if (!isElementwise(*n)) {
      const double seconds = std::max(arithmetic(*n, c, machine), c.bytes / bandwidth) + overhead;
      t.compute += seconds;
      t.byOp[n->op()] += seconds;
      ++t.kernels;
      continue;
    }
    // One pass with its elementwise neighbours: only what crosses the chain's edge moves.
    double moved = 0;
    for (const Value *in : n->inputs()) {
      const Node *def = in ? in->definingNode() : nullptr;
      if (in && !(def && isElementwise(*def)))
        moved += bytesOf(in);
    }
    bool ends = false; // a chain's last node: something else reads its output
    for (const Value *out : n->outputs()) {
      bool outside = outputs.count(out) > 0;
      for (const Node *user : out->users()) // a GEMM's operand read is a read from memory
        outside = outside || !isElementwise(*user) || readByProducts(*user, machine.halfGemmThroughReshapes);
      if (outside) {
        moved += bytesOf(out);
        ends = true;
      }
    }
    const double seconds = std::max(arithmetic(*n, c, machine), moved / bandwidth) + (ends ? overhead : 0);
    t.compute += seconds;
    t.byOp["elementwise"] += seconds;
    t.kernels += ends;
  }
  if (computeAtLastSend >= 0)
    t.computeAfterSend = t.compute - computeAtLastSend;
  return t;
}

} // namespace partita::planner
