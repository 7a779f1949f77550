//===- FusionPlan.cpp -----------------------------------------------------===//
#include "runtime/executor/FusionPlan.h"
#include "runtime/kernels/KernelRegistry.h"
#include <functional>

namespace partita::rt {

namespace {
/// The single-input consumer of `n`'s only result that the device can fuse
/// into `n`'s kernel, or nullptr.
const Node *fusibleEpilogue(const Graph &g, const Node &n, DeviceType device) {
  if (n.numOutputs() != 1 || n.output()->users().size() != 1 || g.isGraphOutput(n.output()))
    return nullptr;
  const Node *u = n.output()->users()[0];
  if (u->numInputs() != 1 || u->numOutputs() != 1)
    return nullptr;
  return KernelRegistry::get().findEpilogue(n.qualifiedOp(), u->qualifiedOp(), device) ? u : nullptr;
}

/// Whether every consumer of `n`'s only result can read it through `n`'s
/// input instead (operand fusion, e.g. a matmul reading a Transpose through
/// strides), so `n` itself never runs.
bool readInPlaceByUsers(const Graph &g, const Node &n, DeviceType device) {
  if (n.numOutputs() != 1 || n.numInputs() < 1 || n.output()->users().empty() || g.isGraphOutput(n.output()) ||
      n.is("Cast")) // a Cast is read through in pairs (halfOperands_)
    return false;
  for (const Node *u : n.output()->users())
    if (!KernelRegistry::get().findOperandFusion(u->qualifiedOp(), n.qualifiedOp(), device))
      return false;
  return true;
}
} // namespace

FusionPlan::FusionPlan(const Graph &g, DeviceType device) : g_(g), device_(device) {
  for (const Node *n : g.nodes())
    if (readInPlaceByUsers(g, *n, device))
      readInPlace_.insert(n);
  // Matmuls with both operands widened from bf16, directly or through a
  // Transpose read in place (the device's Cast operand fusion is a bf16
  // GEMM); a widening every reader reads so never runs.
  llvm::DenseSet<const Node *> widenings;
  for (const Node *n : g.nodes()) {
    if (n->numInputs() < 2 || !KernelRegistry::get().findOperandFusion(n->qualifiedOp(), "Cast", device))
      continue;
    const Node *a = widening(n->input(0)), *b = widening(n->input(1));
    if (a && b) {
      halfOperands_.insert(n);
      widenings.insert(a);
      widenings.insert(b);
    }
  }
  // Reads `v` as operand 0 or 1 of a bf16 GEMM (a bias reads f32), or is a
  // Transpose only such GEMMs read through.
  std::function<bool(const Node *, const Value *)> readsThrough = [&](const Node *u, const Value *v) {
    if (u->is("Transpose") && readInPlace_.count(u))
      return llvm::all_of(u->output()->users(), [&](const Node *t) { return readsThrough(t, u->output()); });
    if (!halfOperands_.count(u))
      return false;
    for (size_t k = 2; k < u->numInputs(); ++k)
      if (u->input(k) == v)
        return false;
    return true;
  };
  for (const Node *w : widenings)
    if (!g.isGraphOutput(w->output()) &&
        llvm::all_of(w->output()->users(), [&](const Node *u) { return readsThrough(u, w->output()); }))
      readInPlace_.insert(w);
  runElsewhere_.insert(readInPlace_.begin(), readInPlace_.end());
  const ClusterFusion *fusion = KernelRegistry::get().clusterFusion(device);
  if (!fusion)
    return;
  // Nodes fused otherwise (read in place, read through, epilogues) stay out
  // of clusters: a value a matmul reads through a Cast must be written out.
  llvm::DenseSet<const Node *> excluded(readInPlace_);
  excluded.insert(widenings.begin(), widenings.end());
  for (const Node *n : g.nodes())
    if (const Node *e = epilogue(*n))
      excluded.insert(e);
  clusters_ = formElementwiseClusters(g, fusion->fusible, excluded);
  for (size_t c = 0; c < clusters_.size(); ++c) {
    runElsewhere_.insert(clusters_[c].nodes.begin(), clusters_[c].nodes.end());
    clusterAt_[clusters_[c].nodes.back()] = c;
  }
}

const Node *FusionPlan::widening(const Value *v) const {
  const Node *d = v ? v->definingNode() : nullptr;
  if (d && d->is("Transpose") && readInPlace_.count(d))
    d = d->input(0)->definingNode();
  return isBf16Widening(d) ? d : nullptr;
}

const Node *FusionPlan::readThrough(const Node &consumer, size_t k) const {
  const Value *in = k < consumer.numInputs() ? consumer.input(k) : nullptr;
  const Node *d = in ? in->definingNode() : nullptr;
  if (!d)
    return nullptr;
  if (readInPlace_.count(d) && !d->is("Cast"))
    return d;
  return halfOperands_.count(&consumer) && k < 2 ? d : nullptr;
}

const Value *FusionPlan::operandValue(const Node &consumer, size_t k) const {
  if (halfOperands_.count(&consumer) && k < 2)
    return widening(consumer.input(k))->input(0);
  const Node *p = readThrough(consumer, k);
  return p ? p->input(0) : k < consumer.numInputs() ? consumer.input(k) : nullptr;
}

const Node *FusionPlan::epilogue(const Node &n) const {
  const Node *e = fusibleEpilogue(g_, n, device_);
  return e && !readInPlace_.count(e) ? e : nullptr; // its consumers read it in place already
}

} // namespace partita::rt
