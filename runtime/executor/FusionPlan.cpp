//===- FusionPlan.cpp -----------------------------------------------------===//
#include "runtime/executor/FusionPlan.h"
#include "runtime/kernels/KernelRegistry.h"

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
  if (n.numOutputs() != 1 || n.numInputs() < 1 || n.output()->users().empty() || g.isGraphOutput(n.output()))
    return false;
  for (const Node *u : n.output()->users())
    if (!KernelRegistry::get().findOperandFusion(u->qualifiedOp(), n.qualifiedOp(), device))
      return false;
  return true;
}
} // namespace

bool isView(const Node &n) {
  return n.is("Reshape") || n.is("Squeeze") || n.is("Unsqueeze") || n.is("Flatten") || n.is("Identity");
}

FusionPlan::FusionPlan(const Graph &g, DeviceType device) : g_(g), device_(device) {
  for (const Node *n : g.nodes())
    if (readInPlaceByUsers(g, *n, device))
      readInPlace_.insert(n);
  runElsewhere_.insert(readInPlace_.begin(), readInPlace_.end());
  const ClusterFusion *fusion = KernelRegistry::get().clusterFusion(device);
  if (!fusion)
    return;
  // Nodes fused otherwise (read in place, epilogues) stay out of clusters.
  llvm::DenseSet<const Node *> excluded(readInPlace_);
  for (const Node *n : g.nodes())
    if (const Node *e = epilogue(*n))
      excluded.insert(e);
  clusters_ = formElementwiseClusters(g, fusion->fusible, excluded);
  for (size_t c = 0; c < clusters_.size(); ++c) {
    runElsewhere_.insert(clusters_[c].nodes.begin(), clusters_[c].nodes.end());
    clusterAt_[clusters_[c].nodes.back()] = c;
  }
}

const Node *FusionPlan::epilogue(const Node &n) const {
  const Node *e = fusibleEpilogue(g_, n, device_);
  return e && !readInPlace_.count(e) ? e : nullptr; // its consumers read it in place already
}

} // namespace partita::rt
