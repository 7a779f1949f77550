//===- WritePlan.cpp - each rank's programs localized, written, plan.json -===//
//
// A rank's program depends on its coordinate on an axis only where it holds
// a block of a weight split over it or slices a value by it: ranks that
// agree on those axes run the same programs, localized once (see below).
// localizePrograms makes them (passes/Localize.cpp, for the first such rank)
// and fills the plan but for the files' hashes; writeCompiledPlan writes
// each as IR and ONNX and hashes it into the plan.
//===----------------------------------------------------------------------===//
#include "compiler/ir/Printer.h"
#include "compiler/onnx/OnnxExport.h"
#include "compiler/pass/PassManager.h"
#include "compiler/plan/Names.h"
#include "compiler/support/OutputFile.h"
#include "driver/Compile.h"
#include "driver/ParameterRecords.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include <map>
#include <set>

namespace partita {

static llvm::Error fail(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

static llvm::Error writeText(llvm::StringRef path, const Graph &g) {
  PrintOptions po;
  po.elideTensorsOver = 4096; // the .onnx beside it holds the values (a causal mask is 4M elements at seq 2048)
  return writeFile(path, [&](llvm::raw_ostream &os) { printGraph(g, os, po); });
}

static std::vector<TensorSpec> specsOf(const std::vector<Value *> &values) {
  std::vector<TensorSpec> out;
  for (const Value *v : values)
    out.push_back({v->name(), v->type()});
  return out;
}

llvm::Expected<LocalPlan> localizePrograms(CompiledPlan &compiled) {
  const CompileOptions &o = compiled.options;
  Graph &g = *compiled.global;
  Plan &plan = compiled.plan;
  const std::vector<ProgramSplit> &stageSplits = compiled.stages;
  const std::unique_ptr<Graph> &unpartitioned = compiled.unpartitioned;
  // A rank's program depends on its coordinate on an axis only where it
  // holds a block of a weight split over it or slices a value by it (a
  // collective's group comes from the runtime, and so does the coordinate
  // of a slice over dp: localize's runtime-slices): ranks that agree on
  // those axes (dp replicas, unless ZeRO-3 splits the weights over dp) run
  // the same program, localized once, for the first such rank (its folder);
  // the others' plan entries point at it.
  const std::string runtimeSliceAxes = mesh_axis::kData;
  std::set<std::string> usedAxes;
  for (const Node *n : g.nodes()) {
    if (n->is("ShardSlice", "partita") && n->stringAttr("axis", "") != runtimeSliceAxes)
      usedAxes.insert(n->stringAttr("axis", ""));
    if (n->is("Weight") && n->output()->sharding()) {
      // A flat part's block over dp is placed as the program loads (localize).
      const WeightRef *ref = g.weights.find(n->stringAttr("name", ""));
      for (const auto &axes : n->output()->sharding()->dims)
        for (const std::string &axis : axes)
          if (axis != runtimeSliceAxes || o.materializeWeights || !ref || !ref->placeableAtLoad())
            usedAxes.insert(axis);
    }
    // Localize gives a vocab-parallel lookup and an embedding gradient the
    // offset of the rank's rows.
    const Value *rows = n->is("Gather") ? n->input(0) : n->is("EmbeddingGrad", "partita") ? n->output() : nullptr;
    if (rows && rows->sharding() && !rows->sharding()->dims.empty())
      usedAxes.insert(rows->sharding()->dims[0].begin(), rows->sharding()->dims[0].end());
  }
  if (o.pp > 1) // each stage has programs of its own
    usedAxes.insert("pp");
  LocalPlan out;
  std::map<std::string, size_t> written; // key -> the rank (index) that runs those programs first
  std::map<int64_t, ParamRecord> params;
  for (size_t ri = 0; ri < plan.ranks.size(); ++ri) {
    RankPlan &r = plan.ranks[ri];
    std::string key;
    for (const MeshAxis &a : g.mesh.axes)
      if (usedAxes.count(a.name) && g.mesh.numDevices() > 1)
        key += a.name + ":" + std::to_string(r.coords.at(a.name)) + ",";
    if (auto it = written.find(key); it != written.end()) {
      r.programs = plan.ranks[it->second].programs;
      out.runsProgramsOf.push_back(it->second);
      continue;
    }
    written[key] = ri;
    out.runsProgramsOf.push_back(ri);
    // The rank's stages: one, or one per model chunk (s, s + pp, ...).
    for (int64_t k = 0, first = o.pp > 1 ? r.coords.at(mesh_axis::kPipeline) : 0; k < o.virtualStages; ++k)
    for (const NamedProgram &program : stageSplits[first + k * o.pp].programs) {
      const int64_t stage = first + k * o.pp;
      LocalProgram lp;
      lp.name = chunkProgram(program.name, stage, plan);
      lp.base = program.name;
      lp.chunk = k;
      lp.rankIndex = ri;
      lp.graph = cloneGraph(*program.graph);
      Graph &local = *lp.graph;
      if (g.mesh.numDevices() == 1) {
        local.mesh = Mesh(); // nothing is sharded: the program is the global one
      } else { // the rank's coordinates on the mesh axes
        std::string coords;
        for (const MeshAxis &a : g.mesh.axes)
          coords += (coords.empty() ? "" : ",") + a.name + ":" + std::to_string(r.coords.at(a.name));
        PassManager lpm;
        lpm.verifyEach = true;
        if (auto err = lpm.addPipeline("localize{coords=" + coords + ",runtime-slices=" + runtimeSliceAxes +
                                       (o.materializeWeights ? "" : ",place-at-load=" + runtimeSliceAxes) + "}"))
          return std::move(err);
        if (auto err = lpm.run(local))
          return std::move(err);
      }
      lp.rel = "rank" + std::to_string(r.rank) + "/" + lp.name + ".onnx";
      if (program.name == optimizer_io::kBackward)
        if (auto err = recordParameters(unpartitioned ? *unpartitioned : g, g, local, r, stage, params))
          return std::move(err);
      r.programs[lp.name] = lp.rel;
      plan.programIO[lp.rel] = ProgramIO{specsOf(local.inputs()), specsOf(local.outputs())};
      out.programs.push_back(std::move(lp));
    }
  }
  planParameters(params, o.pp > 1, plan);
  if (!o.materializeWeights) { // the model's files the programs refer to, as they are now
    std::set<std::string> files;
    for (const Node *n : g.nodes())
      if (n->is("Weight"))
        if (const WeightRef *ref = g.weights.find(n->stringAttr("name", "")); ref && !ref->file.empty())
          files.insert(absoluteWeightFile(ref->file));
    for (const std::string &f : files) {
      WeightFile wf;
      if (!statWeightFile(f, wf))
        return fail(f + ": cannot read the model's external data file");
      plan.weightFiles.push_back(wf);
    }
  }
  return std::move(out);
}

llvm::Error writeCompiledPlan(CompiledPlan &compiled, llvm::StringRef dir) {
  const CompileOptions &o = compiled.options;
  Plan &plan = compiled.plan;
  auto local = localizePrograms(compiled);
  if (!local)
    return local.takeError();
  if (auto ec = llvm::sys::fs::create_directories(dir))
    return fail("cannot create " + dir + ": " + ec.message());
  llvm::SmallString<256> globalPath(dir);
  llvm::sys::path::append(globalPath, "global.pir");
  if (auto err = writeText(globalPath, *compiled.global))
    return err;
  // Large constants (a causal mask every stage's programs read) once per
  // plan, beside the rank folders; a materialized plan stays plain ONNX.
  llvm::SmallString<256> constantsPath(dir);
  llvm::sys::path::append(constantsPath, kSharedConstantsFile);
  SharedConstants shared(std::string(constantsPath), std::string("../") + kSharedConstantsFile);
  for (const LocalProgram &lp : local->programs) {
    RankPlan &r = plan.ranks[lp.rankIndex];
    llvm::SmallString<256> rankDir(dir);
    llvm::sys::path::append(rankDir, "rank" + std::to_string(r.rank));
    if (auto ec = llvm::sys::fs::create_directories(rankDir))
      return fail("cannot create " + rankDir + ": " + ec.message());
    llvm::SmallString<256> onnxPath(dir), irPath(rankDir);
    llvm::sys::path::append(onnxPath, lp.rel);
    llvm::sys::path::append(irPath, lp.name + ".pir");
    if (auto err = writeText(irPath, *lp.graph))
      return err;
    ExportOptions eo;
    if (lp.base == kForwardProgram || lp.base == optimizer_io::kStep) {
      // The programs with weights (the step's: mixed precision's master
      // copies): never in the protobuf (its limit is 2 GB); a second
      // chunk's beside the first's.
      std::string base = lp.base == kForwardProgram ? "weights" : "master_weights";
      eo.externalDataFile = base + (lp.chunk == 0 ? "" : "." + std::to_string(lp.chunk)) + ".bin";
      eo.weightsByReference = !o.materializeWeights;
    }
    if (!o.materializeWeights)
      eo.sharedConstants = &shared;
    if (auto err = exportOnnx(*lp.graph, onnxPath, eo))
      return err;
    if (auto err = recordProgramHash(r, dir, lp.rel))
      return err;
  }
  for (size_t ri = 0; ri < plan.ranks.size(); ++ri) {
    RankPlan &r = plan.ranks[ri];
    if (local->runsProgramsOf[ri] != ri) { // its programs' hashes are the first's
      r.sha256 = plan.ranks[local->runsProgramsOf[ri]].sha256;
      continue;
    }
    // The shards exported beside the programs (none when every weight is
    // read by reference): the forward's weights.bin, and the step's
    // master_weights.bin (mixed precision's masters).
    for (int64_t k = 0; k < o.virtualStages; ++k) {
      std::string rel = rankWeightsFile(r);
      if (k > 0)
        rel = rel.substr(0, rel.size() - 3) + std::to_string(k) + ".bin";
      llvm::SmallString<128> masters(llvm::sys::path::parent_path(rel, llvm::sys::path::Style::posix));
      llvm::sys::path::append(masters, llvm::sys::path::Style::posix,
                              "master_" + llvm::sys::path::filename(rel, llvm::sys::path::Style::posix).str());
      for (const std::string &file : {rel, std::string(masters)}) {
        llvm::SmallString<256> path(dir);
        llvm::sys::path::append(path, file);
        if (llvm::sys::fs::exists(path))
          if (auto err = recordProgramHash(r, dir, file))
            return err;
      }
    }
  }
  if (auto err = shared.commit())
    return err;
  if (!shared.empty()) { // every rank reads it: its hash in every entry (checked before a rank loads)
    auto h = sha256File(constantsPath);
    if (!h)
      return h.takeError();
    for (RankPlan &r : plan.ranks)
      r.sha256[kSharedConstantsFile] = *h;
  }
  llvm::SmallString<256> planPath(dir);
  llvm::sys::path::append(planPath, "plan.json");
  return writePlan(plan, planPath);
}

} // namespace partita
