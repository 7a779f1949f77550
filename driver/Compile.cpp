//===- Compile.cpp - compileModel: import, passes, splits -----------------===//
#include "driver/Compile.h"
#include "compiler/ir/Verifier.h"
#include "compiler/onnx/OnnxImport.h"
#include "compiler/pass/PassManager.h"
#include "compiler/plan/Names.h"
#include "compiler/support/FormatNumber.h"
#include "passes/AddOptimizer.h"
#include "passes/Passes.h"
#include "passes/SplitPipeline.h"
#include "passes/TieEmbeddings.h"
#include <map>

namespace partita {

static llvm::Error fail(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

/// The integer inputs that index an embedding table (a Gather of a weight,
/// possibly through casts and reshapes), with the table's row count.
static std::map<std::string, int64_t> indexRanges(const Graph &g) {
  std::map<std::string, int64_t> ranges;
  for (const Value *in : g.inputs()) {
    if (isFloat(in->type().dtype))
      continue;
    std::vector<const Value *> work{in};
    while (!work.empty()) {
      const Value *v = work.back();
      work.pop_back();
      for (const Node *user : v->users()) {
        if (user->is("Cast") || user->is("Reshape") || user->is("Unsqueeze") || user->is("Squeeze") ||
            user->is("Flatten")) {
          if (user->input(0) == v)
            work.push_back(user->output(0));
          continue;
        }
        if (!user->is("Gather") || user->numInputs() < 2 || user->input(1) != v)
          continue;
        const Value *table = user->input(0);
        const Node *def = table->definingNode();
        if (!def || !def->is("Weight") || table->type().shape.empty())
          continue;
        int64_t axis = user->intAttr("axis", 0);
        if (axis < 0)
          axis += static_cast<int64_t>(table->type().shape.size());
        int64_t rows = table->type().shape[axis];
        auto it = ranges.find(in->name());
        ranges[in->name()] = it == ranges.end() ? rows : std::min(it->second, rows);
      }
    }
  }
  return ranges;
}

/// The pipeline's stage assignment, on the forward (with its loss).
static std::string assignStages(const CompileOptions &o) {
  std::string layers;
  for (int k : o.ppLayers)
    layers += (layers.empty() ? ",layers=" : ",") + std::to_string(k);
  for (const std::string &c : o.ppCuts)
    layers += (c == o.ppCuts.front() ? ",cuts=" : ",") + c;
  // Interleaving cuts pp x virtual-stages stages, of equal layers as Megatron does.
  return "assign-stages{pp=" + std::to_string(o.pp * o.virtualStages) + layers +
         (o.virtualStages > 1 && o.ppLayers.empty() ? ",equal=1" : "") + "}";
}

using Report = std::function<void(const std::string &)>;

static llvm::Error runPipeline(Graph &g, llvm::StringRef pipeline) {
  PassManager pm;
  pm.verifyEach = true;
  if (auto err = pm.addPipeline(pipeline))
    return err;
  return pm.run(g);
}

static bool differentiates(const CompileOptions &o) { return o.emitGradients || o.train; }

/// Canonicalize and tie embeddings; with tp, fused q/k/v cut before
/// differentiating (so each piece is a parameter), and kv heads repeated for
/// more tp ranks than there are kv heads.
static std::string canonicalPipeline(const CompileOptions &o) {
  std::string pipeline = o.untieEmbeddings ? "canonicalize,tie-embeddings{by-value=0}"
                         : o.tieEmbeddings ? "canonicalize,tie-embeddings{max-compare-kb=0}"
                                           : "canonicalize,tie-embeddings";
  if (o.tp > 1)
    pipeline += ",split-fused-projections,replicate-kv-heads{tp=" + std::to_string(o.tp) + "}";
  return pipeline;
}

/// Training: the canonical model, its parameters classified, then the user's
/// --freeze, --trainable and --trainable-file (read before the passes run: a
/// missing file fails fast).
static llvm::Error classifyParameters(const CompileOptions &o, Graph &g, const Report &report) {
  ParameterOverrides overrides;
  overrides.freeze = o.freeze;
  overrides.trainable = o.trainable;
  if (!o.trainableFile.empty()) {
    auto list = readTrainableList(o.trainableFile);
    if (!list)
      return list.takeError();
    overrides.list = std::move(*list);
  }
  if (auto err = runPipeline(g, canonicalPipeline(o) + ",classify-parameters"))
    return err;
  if (auto err = applyParameterOverrides(g, overrides))
    return fail(llvm::toString(std::move(err)));
  for (const std::string &line : sharedParameterWarnings(g))
    report("warning: " + line);
  return llvm::Error::success();
}

/// What runs after classification: the training graph (loss, stages,
/// autodiff, half precision, recompute), or for inference the canonical
/// model and its stages; then tp annotation. Half activations are saved
/// before recompute (which recomputes the half copies the backward then
/// reads), and after it (what the recomputed nodes read).
static std::string modelPipeline(const CompileOptions &o) {
  bool half = o.precision != "fp32";
  std::string pipeline;
  if (differentiates(o)) {
    pipeline = (half ? "mixed-precision{dtype=" + o.precision + "}," : std::string()) + "add-loss," +
               (o.pp > 1 ? assignStages(o) + ",copy-shared-weights," : "") +
               (o.precision == "fp16" ? "autodiff{loss-scale=1}," : "autodiff,") +
               (half ? "save-half-activations,half-gradients{dtype=" + o.precision + "}," : "") +
               (o.recompute != "none" ? "recompute{mode=" + o.recompute + "}," : "") +
               (half && o.recompute != "none" ? "save-half-activations," : "") + "remove-identity,cse,dce";
  } else {
    pipeline = canonicalPipeline(o);
    // annotate reads the classes: a frozen table (rotary cos/sin) is no
    // vocab-parallel embedding; assign-stages lets every stage compute what
    // it derives from frozen buffers.
    if (o.tp > 1 || o.pp > 1)
      pipeline += ",classify-parameters";
    if (o.pp > 1)
      pipeline += "," + assignStages(o);
  }
  if (o.tp > 1)
    pipeline += ",annotate-megatron{tp=" + std::to_string(o.tp) + (o.allowReplicated ? ",allow-replicated=1" : "") + "}";
  return pipeline;
}

/// The one mesh, made from the options (pp outermost, as Megatron lays out
/// ranks: a stage's ranks are neighbours; then dp; tp innermost):
/// annotate-megatron sizes tp in it, the sharding passes work on tp by name,
/// and localize takes each rank's coordinates on every axis.
static void addMesh(const CompileOptions &o, Graph &g) {
  if (o.pp > 1)
    g.mesh.axes.push_back(MeshAxis{mesh_axis::kPipeline, o.pp});
  if (o.dp > 1)
    g.mesh.axes.push_back(MeshAxis{mesh_axis::kData, o.dp});
  g.mesh.axes.push_back(MeshAxis{mesh_axis::kTensor, o.tp});
}

/// The model passes, then the optimizer: it joins the global graph after
/// annotation, so its state takes each weight's sharding and the sharding
/// passes carry it through; under mixed precision, half parameters with
/// float32 masters beside the moments.
static llvm::Error runModelPasses(const CompileOptions &o, Graph &g) {
  PassManager pm;
  pm.verifyEach = true;
  if (auto err = pm.addPipeline(modelPipeline(o)))
    return err;
  if (o.train)
    pm.add(createAddOptimizer(o.adamw));
  if (o.train && o.precision != "fp32")
    if (auto err = pm.addPipeline("half-parameters{dtype=" + o.precision + "}"))
      return err;
  return pm.run(g);
}

/// What canonicalize leaves of a Dropout drops elements: refused here, not
/// when a rank loads the program (the runtime has no random masks yet).
static llvm::Error refuseDropout(const Graph &g) {
  for (const Node *n : g.nodes())
    if (n->is("Dropout")) {
      const Tensor *mode = n->input(2) ? constantValue(n->input(2)) : nullptr;
      if (!n->input(2) || (mode && mode->intAt(0) == 0)) // inference mode: kept for its mask
        return fail("node " + n->describe() + ": a Dropout whose mask output is read is not supported");
      return fail("node " + n->describe() + ": a training-mode Dropout that drops elements is not supported "
                  "(Partita trains without dropout): export with the model's dropout set to 0, or in eval mode");
    }
  return llvm::Error::success();
}

/// Coverage lines for the embeddings tie-embeddings tied, or suspected.
static void reportEmbeddingTies(Graph &g) {
  for (const Node *n : g.nodes())
    if (n->is("Weight") && n->hasAttr("tie_suspected"))
      g.coverage.push_back("untied: '" + n->stringAttr("tie_suspected", "") +
                           "' matches the transpose of embedding '" + n->stringAttr("name", "") +
                           "' in every probe, but the tables are too large to compare whole by default; "
                           "--tie-embeddings compares them (reads both once) and ties them if equal");
  for (const Node *n : g.nodes())
    if (n->is("Weight") && n->hasAttr("tied") && !n->hasAttr(kCopyOfAttr))
      g.coverage.push_back("tied embeddings: '" + n->stringAttr("tied", "") + "' is the transpose of embedding '" +
                           n->stringAttr("name", "") + "': one parameter (--untie-embeddings keeps them apart)");
}

/// The model's initializers, trainable or frozen (before localize turns
/// weights into shards): no stage's copy of one, nor the fp32 master of a
/// half parameter (mixed precision's copy, trained with it).
static std::vector<ParameterClass> modelInitializers(const Graph &g) {
  std::vector<ParameterClass> classes;
  const std::string prefix = optimizer_io::master("");
  for (ParameterClass &c : parameterClasses(g)) {
    const Value *w = g.findValue(c.name);
    if (w && w->definingNode() && w->definingNode()->hasAttr(kCopyOfAttr))
      continue;
    if (llvm::StringRef(c.name).startswith(prefix) && g.findValue(c.name.substr(prefix.size())))
      continue;
    classes.push_back(std::move(c));
  }
  return classes;
}

/// Tensor parallelism: each op's rule, the layout changes lowered to collectives.
static llvm::Error shardTensorParallel(const CompileOptions &o, Graph &g) {
  std::string propagate = "propagate-sharding";
  if (o.sequenceParallel || o.train)
    propagate += std::string("{") + (o.sequenceParallel ? "sequence-parallel=1" : "") +
                 (o.sequenceParallel && o.train ? "," : "") + (o.train ? "sharded-outputs=1" : "") + "}";
  return runPipeline(g, "dce," + propagate + ",insert-collectives,cse,hoist-shard-slices,dce");
}

/// Training data parallelism: the batch split over dp as a sharding, ZeRO's
/// partitions, the dp reductions placed by the planner like tensor
/// parallelism's and grouped into buckets. (Inference replicas share
/// nothing: each runs the programs as they are on whole batches of its own,
/// tools/ReplicaInference.h, so the graph only gets the dp axis.)
static llvm::Error applyDataParallel(const CompileOptions &o, Graph &g) {
  std::string zeroOptions = "axis=dp,stage=" + std::to_string(o.zero);
  if (o.zero == 3)
    zeroOptions += (o.zero3Prefetch.value_or(-1) >= 0 ? ",prefetch=" + std::to_string(*o.zero3Prefetch) : "") +
                   ",persist-below=" + std::to_string(o.zero3Persist.value_or(0));
  std::string zeroPass = o.zero > 0 ? "zero-partition{" + zeroOptions + "}," : "";
  return runPipeline(g, "data-parallel{axis=dp}," + zeroPass +
                            "insert-collectives,cse,dce,coalesce-collectives{axis=dp,bucket-mb=" +
                            formatNumber(o.bucketMb) + ",allgather-bucket-mb=" + formatNumber(o.allgatherBucketMb) +
                            "}");
}

/// The forward program; with --train the backward (joined to it by the
/// saved activations) and the optimizer's grad_norm and step programs
/// (--emit-gradients: one program returning the loss and the gradients).
/// Under a pipeline, each stage's graph first (values crossing stages are
/// the edges the runtime sends, recorded in the plan), then its programs.
static llvm::Expected<std::vector<ProgramSplit>> splitStages(const CompileOptions &o, const Graph &g, Plan &plan) {
  std::vector<ProgramSplit> stages;
  if (o.pp == 1) {
    auto split = splitPrograms(g, /*separateBackward=*/o.train);
    if (!split)
      return split.takeError();
    stages.push_back(std::move(*split));
    return std::move(stages);
  }
  auto pipe = splitPipeline(g, o.pp * o.virtualStages);
  if (!pipe)
    return pipe.takeError();
  for (const PipelineEdge &e : pipe->edges)
    plan.pipelineEdges.push_back({e.value, e.from, e.to});
  for (const PipelineEdge &e : pipe->weights)
    plan.pipelineWeights.push_back({e.value, e.from, e.to});
  for (auto &stageGraph : pipe->stages) {
    auto split = splitPrograms(*stageGraph, /*separateBackward=*/o.train);
    if (!split)
      return split.takeError();
    if (o.train && !llvm::any_of(split->programs, [](const NamedProgram &p) { return p.name == optimizer_io::kStep; }))
      return fail("pipeline stage " + llvm::Twine(stages.size()) + " trains no parameter (every weight it "
                  "holds is frozen, or it holds none): each stage of a training pipeline updates some; move its "
                  "cut (--pp-layers, --pp-cuts) or train a weight there");
    stages.push_back(std::move(*split));
  }
  return std::move(stages);
}

/// The plan's saved activations, outputs and schedule, from the programs.
static llvm::Error planPrograms(const CompileOptions &o, const std::vector<ProgramSplit> &stages, Plan &plan) {
  for (const ProgramSplit &split : stages)
    for (const std::string &v : split.saved)
      if (!llvm::is_contained(plan.saved, v))
        plan.saved.push_back(v);
  // The outputs: the last stage's forward's, less what it keeps for its
  // backward (what a stage sends goes through partita.Send, no output).
  for (const Value *out : stages.back().programs.front().graph->outputs())
    if (!llvm::is_contained(plan.saved, out->name()))
      plan.outputs.push_back({out->name(), out->type()});
  if (!o.train)
    return llvm::Error::success();
  plan.schedule = "gradient-accumulation";
  plan.scheduleOrder = {kForwardProgram, optimizer_io::kBackward, optimizer_io::kGradNorm, optimizer_io::kStep};
  for (const ProgramSplit &split : stages)
    for (const NamedProgram &p : split.programs)
      if (!llvm::is_contained(plan.scheduleOrder, p.name))
        return fail("no schedule runs program '" + p.name + "'");
  return llvm::Error::success();
}

llvm::Expected<CompiledPlan> compileModel(const CompileOptions &o) {
  if (auto err = validate(o))
    return std::move(err);
  registerAllPasses();
  Report report = [&](const std::string &line) {
    if (o.diagnostic)
      o.diagnostic(line);
  };
  ImportOptions opts;
  for (const auto &s : o.inputShapes)
    if (auto err = parseInputShape(s, opts))
      return std::move(err);
  auto imported = importOnnx(o.model, opts);
  if (!imported)
    return imported.takeError();
  CompiledPlan out;
  out.options = o;
  out.global = std::move(*imported);
  Graph &g = *out.global;
  if (differentiates(o))
    if (auto err = classifyParameters(o, g, report))
      return std::move(err);
  addMesh(o, g);
  if (auto err = runModelPasses(o, g))
    return std::move(err);
  if (auto err = refuseDropout(g))
    return std::move(err);
  reportEmbeddingTies(g);
  std::map<std::string, int64_t> ranges = indexRanges(g); // before the lookups are split by vocabulary
  if (differentiates(o))
    out.initializers = modelInitializers(g);
  // Training needs the loss and the gradients only: without the logits
  // output (output 1, after the loss) a vocab-parallel head's logits are
  // never gathered. Annotation ran first: it finds the LM head by that output.
  int64_t vocab = 0;
  if (o.train && g.outputs().size() > 1) {
    vocab = g.outputs()[1]->type().shape.back();
    g.outputs().erase(g.outputs().begin() + 1);
  }
  if (o.tp > 1)
    if (auto err = shardTensorParallel(o, g))
      return std::move(err);
  // What one data-parallel replica feeds (the global graph takes dp of them);
  // the optimizer's inputs are its programs' own.
  std::vector<TensorSpec> replicaInputs;
  for (const Value *in : g.inputs())
    if (!optimizer_io::readOnlyByOptimizer(*in))
      replicaInputs.push_back({in->name(), in->type()});
  if (o.zero > 0 && o.dp == 1)
    report("note: --zero " + std::to_string(o.zero) + " with --dp 1 partitions nothing (one data-parallel rank "
           "holds all of the optimizer's state)");
  // ZeRO-3 turns each trained weight into its flat part: the parameters are
  // recorded (merge's shard types and targets) from the weights as they
  // were, and the launcher writes whole shards back. So does every ZeRO
  // stage to a float32 master copy (half-parameters).
  if (o.dp > 1 && (o.zero >= 3 || (o.zero >= 1 && o.precision != "fp32")))
    out.unpartitioned = cloneGraph(g);
  if (o.dp > 1 && o.train)
    if (auto err = applyDataParallel(o, g))
      return std::move(err);
  if (o.train)
    if (auto err = runPipeline(g, "weights-into-backward,cse,dce"))
      return std::move(err);
  Plan &plan = out.plan;
  plan = makePlan(g.mesh);
  auto stages = splitStages(o, g, plan);
  if (!stages)
    return stages.takeError();
  out.stages = std::move(*stages);
  plan.virtualStages = o.virtualStages;
  plan.precision = o.precision;
  plan.optimizer = o.adamw;
  plan.vocab = vocab;
  plan.zero = o.dp > 1 ? o.zero : 0;
  plan.inputs = replicaInputs;
  if (auto err = planPrograms(o, out.stages, plan))
    return std::move(err);
  plan.coverage = g.coverage;
  plan.indexRanges = ranges;
  for (const ParameterClass &c : out.initializers)
    plan.initializers.push_back({c.name, c.trainable, c.reason});
  return std::move(out);
}

} // namespace partita
