//===- ParameterRecords.cpp -----------------------------------------------===//
#include "driver/ParameterRecords.h"
#include "compiler/plan/Names.h"
#include "passes/TieEmbeddings.h"
#include "passes/sharding/Layout.h"

namespace partita {

static llvm::Error fail(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

/// Where merge writes the parameter Weight node `w` of the global graph: its
/// initializer (through a transpose or a box when the weight is a reference
/// to part of one), and the head tied to it.
static std::vector<ParamTarget> paramTargets(const Graph &global, const Node &w) {
  std::string name = w.stringAttr("name", w.output()->name());
  const WeightRef *ref = global.weights.find(name);
  std::vector<ParamTarget> out;
  out.push_back({ref && !ref->source.empty() ? ref->source : name, ref ? ref->perm : std::vector<int64_t>{},
                 ref ? ref->viewStart : Shape{}, w.output()->type().shape, {}});
  if (ref && ref->repeat) // kv head copies (replicate-kv-heads): one is written
    out.back().repeat = {ref->repeat->dim, ref->repeat->block, ref->repeat->times};
  if (ref && !ref->storedShape.empty())
    out.back().stored = ref->storedShape;
  else if (!ref)
    out.back().stored = w.output()->type().shape;
  for (const std::string &h : tiedHeadNames(w)) {
    const WeightRef *hr = global.weights.find(h);
    // A head that refers to stored bytes (a transpose or a box of them: the
    // table's own, as a Transpose of it gives) is written with them; a head
    // initializer of its own gets the table's transpose.
    if (!hr || !hr->perm.empty() || !hr->viewStart.empty())
      continue;
    std::string source = !hr->source.empty() ? hr->source : h;
    if (source != out[0].initializer)
      out.push_back({source, {1, 0}, {}, w.output()->type().shape, {}});
  }
  return out;
}

llvm::Error recordParameters(const Graph &global, const Graph &partitioned, const Graph &local,
                                    const RankPlan &r, int64_t stage, std::map<int64_t, ParamRecord> &byStage) {
  ParamRecord rec;
  auto &[names, parts, types, targets, layouts] = rec;
  for (const Value *out : local.outputs()) {
    llvm::StringRef n(out->name());
    if (!n.consume_front(optimizer_io::kGradPrefix))
      continue;
    const Value *gw = global.findValue(n);
    if (!gw || !gw->definingNode() || !gw->definingNode()->is("Weight"))
      return fail("parameter " + n + " is no weight of the global graph");
    names.push_back(n.str());
    // What the launcher writes back: the parameter, or mixed precision's
    // float32 master copy of it (half-parameters).
    std::string written = global.findValue(optimizer_io::master(n.str())) ? optimizer_io::master(n.str()) : n.str();
    const Value *held = partitioned.findValue(written); // ZeRO: the rank's part of the flat buffer
    parts.push_back(held && held->sharding() && layoutOf(held, mesh_axis::kData).str() != "R");
    TensorType shard = global.findValue(written)->type(); // the rank's shard of the weight (ZeRO-2's gradient is a flat part of it)
    if (gw->sharding())
      shard.shape = gw->sharding()->localShape(global.mesh, shard.shape);
    types.push_back(shard);
    targets.push_back(paramTargets(global, *gw->definingNode()));
    std::map<std::string, std::string> layout;
    for (const MeshAxis &a : global.mesh.axes)
      layout[a.name] = layoutOf(gw, a.name).str();
    layouts.push_back(std::move(layout));
  }
  auto [it, first] = byStage.try_emplace(stage, std::move(rec));
  if (!first && it->second.names != names)
    return fail("rank " + llvm::Twine(r.rank) + " updates different parameters than the first rank of its stage");
  return llvm::Error::success();
}

void planParameters(const std::map<int64_t, ParamRecord> &byStage, bool pipeline, Plan &plan) {
  for (const auto &[stage, rec] : byStage) {
    plan.params.insert(plan.params.end(), rec.names.begin(), rec.names.end());
    plan.paramPartitioned.insert(plan.paramPartitioned.end(), rec.parts.begin(), rec.parts.end());
    plan.paramTypes.insert(plan.paramTypes.end(), rec.types.begin(), rec.types.end());
    plan.paramTargets.insert(plan.paramTargets.end(), rec.targets.begin(), rec.targets.end());
    plan.paramLayouts.insert(plan.paramLayouts.end(), rec.layouts.begin(), rec.layouts.end());
    if (pipeline)
      plan.paramStages.insert(plan.paramStages.end(), rec.names.size(), stage);
  }
  if (!llvm::is_contained(plan.paramPartitioned, true))
    plan.paramPartitioned.clear();
}

} // namespace partita
