//===- CompileCommand.cpp - partita compile -------------------------------===//
//
// model.onnx -> out/plan.json, out/global.pir (the sharded global IR) and
// out/rank<k>/forward.onnx (+ forward.pir) for every rank. Everything is
// written to a staging folder and moved into place when complete
// (tools/OutputDir.h: a failure leaves no partial output, and a folder
// Partita did not write is never replaced).
//===----------------------------------------------------------------------===//
#include "compiler/ir/Printer.h"
#include "compiler/ir/Verifier.h"
#include "compiler/onnx/OnnxExport.h"
#include "compiler/pass/PassManager.h"
#include "compiler/support/OutputFile.h"
#include "passes/AddOptimizer.h"
#include "passes/SplitPipeline.h"
#include "passes/SplitPrograms.h"
#include "passes/sharding/Layout.h"
#include "passes/ClassifyParameters.h"
#include "passes/TieEmbeddings.h"
#include "tools/Commands.h"
#include "tools/DsConfig.h"
#include "tools/OutputDir.h"
#include "compiler/plan/Plan.h"
#include "tools/ToolCommon.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"
#include <cmath>
#include <map>
#include <set>

namespace cl = llvm::cl;

namespace partita {

static cl::SubCommand compileCmd("compile", "Compile an ONNX model into per-rank programs");
static cl::opt<std::string> model(cl::Positional, cl::desc("<model.onnx>"), cl::sub(compileCmd), cl::Required);
static cl::opt<std::string> outDir("o", cl::desc("Output folder"), cl::sub(compileCmd), cl::Required);
static cl::list<std::string> inputShapes("input-shape", cl::desc("Fix an input's shape: NAME=D1xD2..."),
                                         cl::sub(compileCmd));
static cl::opt<int> tp("tp", cl::desc("Tensor-parallel size"), cl::init(1), cl::sub(compileCmd));
static cl::opt<int> pp("pp", cl::desc("Pipeline-parallel size"), cl::init(1), cl::sub(compileCmd));
static cl::opt<int> dp("dp", cl::desc("Data-parallel size"), cl::init(1), cl::sub(compileCmd));
static cl::opt<std::string> recompute("recompute",
                                      cl::desc("Activation recompute in the backward: none (default), selective "
                                               "(the attention core) or full (each layer, from its input)"),
                                      cl::init("none"), cl::sub(compileCmd));
static cl::opt<std::string> precision("precision",
                                      cl::desc("Training precision: fp32 (default), bf16 or fp16 (activations and "
                                               "gradients rounded to it, fp32 master weights and optimizer state; "
                                               "fp16 with loss scaling, launch --loss-scale ...)"),
                                      cl::init("fp32"), cl::sub(compileCmd));
static cl::opt<int> virtualStages("virtual-stages",
                                  cl::desc("Model chunks per pipeline rank (interleaved 1F1B; needs --pp and --train)"),
                                  cl::init(1), cl::sub(compileCmd));
static cl::list<std::string> ppCuts("pp-cuts",
                                    cl::desc("Start pipeline stages 1.. right before these nodes (their loc names)"),
                                    cl::CommaSeparated, cl::sub(compileCmd));
static cl::list<int> ppLayers("pp-layers",
                              cl::desc("Transformer layers per pipeline stage (3,4,4,3) instead of the cost balance"),
                              cl::value_desc("n1,n2,..."), cl::CommaSeparated, cl::sub(compileCmd));
static cl::opt<int> zero("zero", cl::desc("ZeRO stage 0-3"), cl::init(0), cl::sub(compileCmd));
static cl::opt<bool> train("train", cl::desc("Build training programs"), cl::init(false), cl::sub(compileCmd));
static cl::opt<bool> sequenceParallel("sequence-parallel", cl::desc("Megatron sequence parallelism"),
                                      cl::init(false), cl::sub(compileCmd));
static cl::opt<bool> allowReplicated("allow-replicated",
                                     cl::desc("Replicate blocks that cannot be sharded instead of failing"),
                                     cl::init(false), cl::sub(compileCmd));
static cl::opt<bool> emitGradients("emit-gradients",
                                   cl::desc("Append next-token cross-entropy (input 'labels') and its backward "
                                            "graph; the programs return the loss and every weight gradient "
                                            "(no optimizer: that is --train)"),
                                   cl::init(false), cl::sub(compileCmd));
static cl::opt<double> adamBeta1("adam-beta1", cl::desc("AdamW's first-moment decay β1 (--train)"), cl::init(0.9),
                                 cl::sub(compileCmd));
static cl::opt<double> adamBeta2("adam-beta2", cl::desc("AdamW's second-moment decay β2 (--train)"),
                                 cl::init(0.999), cl::sub(compileCmd));
static cl::opt<double> adamEps("adam-eps", cl::desc("AdamW's ε (--train)"), cl::init(1e-8), cl::sub(compileCmd));
static cl::opt<double> weightDecay("weight-decay", cl::desc("AdamW decoupled weight decay (--train)"),
                                   cl::init(0.01), cl::sub(compileCmd));
static cl::list<std::string> freezePatterns(
    "freeze", cl::desc("Freeze the initializers matching a glob over the whole name (*, ?, [..]; repeatable; "
                       "after the default rule)"),
    cl::sub(compileCmd));
static cl::list<std::string> trainablePatterns(
    "trainable", cl::desc("Train the initializers matching a glob over the whole name (repeatable; after "
                          "--freeze)"),
    cl::sub(compileCmd));
static cl::opt<std::string> trainableFile(
    "trainable-file",
    cl::desc("Train exactly the initializers FILE lists, one name per line (blank lines and # comments "
             "ignored); every other float initializer is frozen. Applied first; --freeze, then --trainable, "
             "adjust what it leaves"),
    cl::value_desc("FILE"), cl::sub(compileCmd));
static cl::opt<bool> tieEmbeddings(
    "tie-embeddings",
    cl::desc("Tie an output projection to the embedding whose transpose it equals however large the tables "
             "(compile reads both once; by default tables over 512 MiB are only probed and stay untied)"),
    cl::init(false), cl::sub(compileCmd));
static cl::opt<bool> untieEmbeddings(
    "untie-embeddings",
    cl::desc("Keep an output projection that is a separate initializer equal to an embedding's transpose a "
             "weight of its own (by default it is tied to the embedding: one parameter, as in the exported "
             "model; a head that reads the embedding itself stays tied)"),
    cl::init(false), cl::sub(compileCmd));
static cl::opt<bool> materializeWeights(
    "materialize-weights",
    cl::desc("Write each rank's weight shards into its own external data file (rankK/weights.bin), one tensor "
             "in memory at a time, instead of referring to the model's external data file (the default; a model "
             "with its weights inside the .onnx always gets rankK/weights.bin)"),
    cl::init(false), cl::sub(compileCmd));
static cl::opt<double> bucketMb("bucket-mb",
                                cl::desc("Data parallelism: gradients are all-reduced over dp in buckets of about this "
                                         "many megabytes, each started as soon as its last gradient is computed "
                                         "(DDP's bucket_cap_mb; 0: one all-reduce per gradient)"),
                                cl::init(25.0), cl::sub(compileCmd));
static cl::opt<double> allgatherBucketMb(
    "allgather-bucket-mb",
    cl::desc("ZeRO-1/2: the updated parameters' shards are all-gathered over dp in buckets of about this many "
             "megabytes (DeepSpeed's allgather_bucket_size; a parameter larger than a bucket is gathered alone, "
             "with no staging copy; 0: one all-gather per parameter)"),
    cl::init(25.0), cl::sub(compileCmd));
static cl::opt<int64_t> zero3Prefetch("zero3-prefetch-elements",
                                      cl::desc("ZeRO-3: start each parameter's all-gather early, so that up to this "
                                               "many gathered elements are in flight ahead of their use "
                                               "(DeepSpeed's stage3_prefetch_bucket_size; default: one parameter "
                                               "ahead; 0: none)"),
                                      cl::init(-1), cl::sub(compileCmd));
static cl::opt<int64_t> zero3Persist("zero3-persistence-threshold",
                                     cl::desc("ZeRO-3: a parameter of fewer elements (the whole parameter's) stays whole on every "
                                              "rank, as at stage 2 (DeepSpeed's stage3_param_persistence_threshold; "
                                              "default 0: every one is partitioned)"),
                                     cl::init(0), cl::sub(compileCmd));
static cl::opt<std::string> dsConfig("ds-config",
                                     cl::desc("A DeepSpeed config: its keys set the flags they map to (README); a "
                                              "flag given here overrides the file"),
                                     cl::value_desc("FILE"), cl::sub(compileCmd));
static cl::opt<bool> printIR("print-ir", cl::desc("Print the (sharded) global IR"), cl::init(false),
                             cl::sub(compileCmd));

bool compileSelected() { return static_cast<bool>(compileCmd); }

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

/// Records in the plan the weights rank `r`'s step program updates (the
/// backward program `local`'s grad.<w> outputs, in their order), with their
/// local types, their layouts on every axis and where merge writes them;
/// every rank updates the same ones.
/// The parameters one rank's backward program gives gradients for.
struct ParamRecord {
  std::vector<std::string> names;
  std::vector<bool> parts;
  std::vector<TensorType> types;
  std::vector<std::vector<ParamTarget>> targets;
  std::vector<std::map<std::string, std::string>> layouts;
};

static llvm::Error recordParameters(const Graph &global, const Graph &partitioned, const Graph &local,
                                    const RankPlan &r, int64_t stage, std::map<int64_t, ParamRecord> &byStage) {
  ParamRecord rec;
  auto &[names, parts, types, targets, layouts] = rec;
  for (const Value *out : local.outputs()) {
    llvm::StringRef n(out->name());
    if (!n.consume_front("grad."))
      continue;
    const Value *gw = global.findValue(n);
    if (!gw || !gw->definingNode() || !gw->definingNode()->is("Weight"))
      return fail("parameter " + n + " is no weight of the global graph");
    names.push_back(n.str());
    // What the launcher writes back: the parameter, or mixed precision's
    // float32 master copy of it (half-parameters).
    std::string written = global.findValue(optimizer_io::master(n.str())) ? optimizer_io::master(n.str()) : n.str();
    const Value *held = partitioned.findValue(written); // ZeRO: the rank's part of the flat buffer
    parts.push_back(held && held->sharding() && layoutOf(held, "dp").str() != "R");
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

/// The parameters of every stage, in stage order, into the plan.
static void planParameters(const std::map<int64_t, ParamRecord> &byStage, bool pipeline, Plan &plan) {
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
static std::string assignStages() {
  std::string layers;
  for (int k : ppLayers)
    layers += (layers.empty() ? ",layers=" : ",") + std::to_string(k);
  for (const std::string &c : ppCuts)
    layers += (c == ppCuts.front() ? ",cuts=" : ",") + c;
  // Interleaving cuts pp x virtual-stages stages, of equal layers as Megatron does.
  return "assign-stages{pp=" + std::to_string(pp * virtualStages) + layers +
         (virtualStages > 1 && ppLayers.empty() ? ",equal=1" : "") + "}";
}

static llvm::Error compile(llvm::StringRef dir) {
  if (tp < 1 || pp < 1 || dp < 1)
    return fail("--tp, --pp and --dp must be >= 1");
  if (!ppCuts.empty() && (!ppLayers.empty() || virtualStages > 1))
    return fail("--pp-cuts places every stage itself: it goes with neither --pp-layers nor --virtual-stages");
  if (virtualStages < 1 || virtualStages > 1024 || pp > 1 << 16)
    return fail(virtualStages < 1 || virtualStages > 1024 ? "--virtual-stages must be in [1, 1024]"
                                                          : "--pp must be at most 65536");
  if (virtualStages > 1 && (pp < 2 || !train))
    return fail("--virtual-stages " + llvm::Twine(virtualStages) + " interleaves the stages of a pipeline's "
                "training: it needs --pp > 1 and --train");
  if (!ppLayers.empty() && static_cast<int>(ppLayers.size()) != pp * virtualStages)
    return fail("--pp-layers gives " + llvm::Twine(ppLayers.size()) + " stage(s), --pp" +
                (virtualStages > 1 ? " x --virtual-stages is " : " is ") + llvm::Twine(pp * virtualStages));
  if (recompute != "none" && recompute != "selective" && recompute != "full")
    return fail("--recompute " + recompute + ": none, selective or full");
  if (precision != "fp32" && precision != "bf16" && precision != "fp16")
    return fail("--precision " + precision + ": fp32, bf16 or fp16");
  if (precision != "fp32" && !train)
    return fail("--precision " + precision + " needs --train (mixed precision is a training layout)");
  if (recompute != "none" && !train)
    return fail("--recompute " + recompute + " needs --train (it trades the backward's saved activations for compute)");
  if (pp > 1 && emitGradients && !train)
    return fail("--emit-gradients returns every gradient from one program; with --pp use --train");
  if (zero < 0 || zero > 3)
    return fail("--zero " + llvm::Twine(zero) + ": ZeRO stages are 0 to 3");
  if (zero > 0 && !train)
    return fail("--zero " + llvm::Twine(zero) + " needs --train (ZeRO partitions the optimizer's state)");
  for (const auto *flag : {&zero3Prefetch, &zero3Persist})
    if (flag->getNumOccurrences() && zero != 3)
      return fail("--" + flag->ArgStr + " applies to --zero 3 (this compile has --zero " + llvm::Twine(zero) + ")");
  if (zero3Prefetch < -1 || zero3Persist < 0)
    return fail(zero3Persist < 0 ? "--zero3-persistence-threshold must be >= 0 elements"
                                 : "--zero3-prefetch-elements must be >= 0 elements");
  if (sequenceParallel && tp == 1)
    return fail("--sequence-parallel needs --tp > 1");
  if (!std::isfinite(weightDecay) || weightDecay < 0)
    return fail("--weight-decay " + formatNumber(weightDecay) + ": must be a finite number >= 0");
  for (const auto *beta : {&adamBeta1, &adamBeta2})
    if (!(beta->getValue() >= 0 && beta->getValue() < 1))
      return fail("--" + beta->ArgStr + " " + formatNumber(beta->getValue()) + ": must be in [0, 1)");
  for (const auto *mb : {&bucketMb, &allgatherBucketMb})
    if (!(mb->getValue() >= 0) || !std::isfinite(mb->getValue()))
      return fail("--" + mb->ArgStr + " " + formatNumber(mb->getValue()) + ": must be a finite number >= 0");
  if (!(adamEps > 0) || !std::isfinite(adamEps))
    return fail("--adam-eps " + formatNumber(adamEps) + ": must be a finite number > 0");
  ImportOptions opts;
  for (const auto &s : inputShapes)
    if (auto err = parseInputShape(s, opts))
      return err;
  auto imported = importOnnx(model, opts);
  if (!imported)
    return imported.takeError();
  Graph &g = **imported;
  PassManager pm;
  pm.verifyEach = true;
  if (tieEmbeddings && untieEmbeddings)
    return fail("--tie-embeddings and --untie-embeddings contradict each other: give one");
  std::string pipeline = untieEmbeddings ? "canonicalize,tie-embeddings{by-value=0}"
                         : tieEmbeddings ? "canonicalize,tie-embeddings{max-compare-kb=0}"
                                         : "canonicalize,tie-embeddings";
  bool differentiate = emitGradients || train;
  if (!differentiate && (!freezePatterns.empty() || !trainablePatterns.empty() || !trainableFile.empty()))
    return fail("--freeze, --trainable and --trainable-file need --train or --emit-gradients");
  ParameterOverrides overrides;
  overrides.freeze = freezePatterns;
  overrides.trainable = trainablePatterns;
  if (!trainableFile.empty()) { // read before the passes run: a missing file fails fast
    auto list = readTrainableList(trainableFile);
    if (!list)
      return list.takeError();
    overrides.list = std::move(*list);
  }
  // Fused q/k/v are cut before differentiating, so each piece is a parameter;
  // so are kv heads repeated for more tp ranks than there are kv heads.
  std::string perHead =
      tp > 1 ? ",split-fused-projections,replicate-kv-heads{tp=" + std::to_string(tp) + "}" : std::string();
  if (differentiate) {
    pipeline += perHead + ",classify-parameters";
    if (auto err = pm.addPipeline(pipeline))
      return err;
    if (auto err = pm.run(g))
      return err;
    if (auto err = applyParameterOverrides(g, overrides))
      return fail(llvm::toString(std::move(err)));
    for (const std::string &line : sharedParameterWarnings(g))
      llvm::errs() << "partita compile: warning: " << line << "\n";
    pm = PassManager();
    pm.verifyEach = true;
    pipeline = (precision != "fp32" ? "mixed-precision{dtype=" + precision + "}," : std::string()) + "add-loss," +
               (pp > 1 ? assignStages() + ",copy-shared-weights," : "") +
               (precision == "fp16" ? "autodiff{loss-scale=1}," : "autodiff,") +
               // Half activations saved before recompute (which recomputes the half copies the
               // backward then reads), and after it (what the recomputed nodes read).
               (precision != "fp32" ? "save-half-activations,half-gradients{dtype=" + precision + "}," : "") +
               (recompute != "none" ? "recompute{mode=" + recompute + "}," : "") +
               (precision != "fp32" && recompute != "none" ? "save-half-activations," : "") + "remove-identity,cse,dce";
  } else if (tp > 1 || pp > 1) { // annotate reads the classes: a frozen table (rotary cos/sin) is no
    // vocab-parallel embedding; assign-stages lets every stage compute what it derives from frozen buffers
    pipeline += perHead + ",classify-parameters";
  }
  if (!differentiate && pp > 1)
    pipeline += "," + assignStages();
  // The one mesh, made here from the flags (dp major, as the plan lays out
  // ranks): annotate-megatron sizes tp in it, the sharding passes work on tp
  // by name, and localize takes each rank's coordinates on every axis.
  if (pp > 1) // outermost, as Megatron lays out ranks: a stage's ranks are neighbours
    g.mesh.axes.push_back(MeshAxis{"pp", pp});
  if (dp > 1)
    g.mesh.axes.push_back(MeshAxis{"dp", dp});
  g.mesh.axes.push_back(MeshAxis{"tp", tp});
  std::string propagate = "propagate-sharding";
  if (sequenceParallel || train)
    propagate += std::string("{") + (sequenceParallel ? "sequence-parallel=1" : "") +
                 (sequenceParallel && train ? "," : "") + (train ? "sharded-outputs=1" : "") + "}";
  if (tp > 1)
    pipeline += ",annotate-megatron{tp=" + std::to_string(tp) + (allowReplicated ? ",allow-replicated=1" : "") + "}";
  if (auto err = pm.addPipeline(pipeline))
    return err;
  // The optimizer joins the global graph after annotation, so its state
  // takes each weight's sharding and the sharding passes carry it through.
  AdamWOptions adamw{adamBeta1, adamBeta2, adamEps, weightDecay};
  if (train)
    pm.add(createAddOptimizer(adamw));
  if (train && precision != "fp32") // half parameters, float32 masters beside the moments
    if (auto err = pm.addPipeline("half-parameters{dtype=" + precision + "}"))
      return err;
  if (auto err = pm.run(g))
    return err;
  // What canonicalize leaves of a Dropout drops elements: refused here, not
  // when a rank loads the program (the runtime has no random masks yet).
  for (const Node *n : g.nodes())
    if (n->is("Dropout")) {
      const Tensor *mode = n->input(2) ? constantValue(n->input(2)) : nullptr;
      if (!n->input(2) || (mode && mode->intAt(0) == 0)) // inference mode: kept for its mask
        return fail("node " + n->describe() + ": a Dropout whose mask output is read is not supported");
      return fail("node " + n->describe() + ": a training-mode Dropout that drops elements is not supported "
                  "(Partita trains without dropout): export with the model's dropout set to 0, or in eval mode");
    }
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
  std::map<std::string, int64_t> ranges = indexRanges(g); // before the lookups are split by vocabulary
  std::vector<ParameterClass> classes; // before localize turns weights into shards
  if (differentiate)
    for (ParameterClass &c : parameterClasses(g)) { // the model's initializers: no stage's copy of one
      const Value *w = g.findValue(c.name);
      if (w && w->definingNode() && w->definingNode()->hasAttr(kCopyOfAttr))
        continue;
      // Nor the fp32 master of a half parameter (mixed precision's copy, trained with it).
      const std::string prefix = optimizer_io::master("");
      if (llvm::StringRef(c.name).startswith(prefix) && g.findValue(c.name.substr(prefix.size())))
        continue;
      classes.push_back(std::move(c));
    }
  // Training needs the loss and the gradients only: without the logits
  // output (output 1, after the loss) a vocab-parallel head's logits are
  // never gathered. Annotation ran first: it finds the LM head by that output.
  int64_t vocab = 0;
  if (train && g.outputs().size() > 1) {
    vocab = g.outputs()[1]->type().shape.back();
    g.outputs().erase(g.outputs().begin() + 1);
  }
  if (tp > 1) {
    PassManager spm;
    spm.verifyEach = true;
    if (auto err = spm.addPipeline("dce," + propagate + ",insert-collectives,cse,hoist-shard-slices,dce"))
      return err;
    if (auto err = spm.run(g))
      return err;
  }
  // What one data-parallel replica feeds (the global graph takes dp of them);
  // the optimizer's inputs are its programs' own.
  std::vector<TensorSpec> replicaInputs;
  for (const Value *in : g.inputs())
    if (!optimizer_io::readOnlyByOptimizer(*in))
      replicaInputs.push_back({in->name(), in->type()});
  // Data parallelism splits the batch over dp: the global graph computes dp
  // replicas' batches, and the gradients' all-reduces over dp are placed by
  // the planner like tensor parallelism's. Inference replicas share nothing:
  // each runs the programs as they are on whole batches of its own
  // (tools/ReplicaInference.h), so the graph only gets the dp axis.
  if (zero > 0 && dp == 1)
    llvm::errs() << "partita: note: --zero " << zero << " with --dp 1 partitions nothing (one data-parallel rank "
                 << "holds all of the optimizer's state)\n";
  // ZeRO-3 turns each trained weight into its flat part: the parameters
  // are recorded (merge's shard types and targets) from the weights as
  // they were, and the launcher writes whole shards back.
  // So does every ZeRO stage to a float32 master copy (half-parameters).
  std::unique_ptr<Graph> unpartitioned =
      dp > 1 && (zero >= 3 || (zero >= 1 && precision != "fp32")) ? cloneGraph(g) : nullptr;
  if (dp > 1 && train) {
    PassManager dpm;
    dpm.verifyEach = true;
    std::string zeroOptions = "axis=dp,stage=" + std::to_string(zero);
    if (zero == 3)
      zeroOptions += (zero3Prefetch >= 0 ? ",prefetch=" + std::to_string(zero3Prefetch) : "") +
                     ",persist-below=" + std::to_string(zero3Persist);
    std::string zeroPass = zero > 0 ? "zero-partition{" + zeroOptions + "}," : "";
    if (auto err = dpm.addPipeline("data-parallel{axis=dp}," + zeroPass +
                                   "insert-collectives,cse,dce,coalesce-collectives{axis=dp,bucket-mb=" +
                                   formatNumber(bucketMb) + ",allgather-bucket-mb=" +
                                   formatNumber(allgatherBucketMb) + "}"))
      return err;
    if (auto err = dpm.run(g))
      return err;
  }
  // The forward program; with --train the backward (joined to it by the
  // saved activations) and the optimizer's grad_norm and step programs
  // (--emit-gradients: one program returning the loss and the gradients).
  // Under a pipeline, each stage's graph first (values crossing stages are
  // the edges the runtime sends), then its programs.
  std::vector<ProgramSplit> stageSplits;
  Mesh mesh = g.mesh;
  Plan plan = makePlan(mesh);
  if (pp > 1) {
    auto pipe = splitPipeline(g, pp * virtualStages);
    if (!pipe)
      return pipe.takeError();
    for (const PipelineEdge &e : pipe->edges)
      plan.pipelineEdges.push_back({e.value, e.from, e.to});
    for (const PipelineEdge &e : pipe->weights)
      plan.pipelineWeights.push_back({e.value, e.from, e.to});
    for (auto &stageGraph : pipe->stages) {
      auto split = splitPrograms(*stageGraph, /*separateBackward=*/train);
      if (!split)
        return split.takeError();
      if (train && !llvm::any_of(split->programs, [](const NamedProgram &p) { return p.name == optimizer_io::kStep; }))
        return fail("pipeline stage " + llvm::Twine(stageSplits.size()) + " trains no parameter (every weight it "
                    "holds is frozen, or it holds none): each stage of a training pipeline updates some; move its "
                    "cut (--pp-layers, --pp-cuts) or train a weight there");
      stageSplits.push_back(std::move(*split));
    }
  } else {
    auto split = splitPrograms(g, /*separateBackward=*/train);
    if (!split)
      return split.takeError();
    stageSplits.push_back(std::move(*split));
  }
  plan.virtualStages = virtualStages;
  plan.precision = precision;
  plan.optimizer = adamw;
  plan.vocab = vocab;
  plan.zero = dp > 1 ? zero : 0;
  plan.inputs = replicaInputs;
  for (const ProgramSplit &split : stageSplits)
    for (const std::string &v : split.saved)
      if (!llvm::is_contained(plan.saved, v))
        plan.saved.push_back(v);
  // The outputs: the last stage's forward's, less what it keeps for its
  // backward (what a stage sends goes through partita.Send, no output).
  for (const Value *out : stageSplits.back().programs.front().graph->outputs())
    if (!llvm::is_contained(plan.saved, out->name()))
      plan.outputs.push_back({out->name(), out->type()});
  if (train) {
    plan.schedule = "gradient-accumulation";
    plan.scheduleOrder = {"forward", optimizer_io::kBackward, optimizer_io::kGradNorm, optimizer_io::kStep};
    for (const ProgramSplit &split : stageSplits)
      for (const NamedProgram &p : split.programs)
        if (std::find(plan.scheduleOrder.begin(), plan.scheduleOrder.end(), p.name) == plan.scheduleOrder.end())
          return fail("no schedule runs program '" + p.name + "'");
  }
  plan.coverage = g.coverage;
  plan.indexRanges = ranges;
  if (differentiate)
    for (const ParameterClass &c : classes)
      plan.initializers.push_back({c.name, c.trainable, c.reason});

  if (auto ec = llvm::sys::fs::create_directories(dir))
    return fail("cannot create " + dir + ": " + ec.message());
  llvm::SmallString<256> globalPath(dir);
  llvm::sys::path::append(globalPath, "global.pir");
  if (auto err = writeText(globalPath, g))
    return err;
  // A rank's program depends on its coordinate on an axis only where it
  // holds a block of a weight split over it or slices a value by it (a
  // collective's group comes from the runtime, and so does the coordinate
  // of a slice over dp: localize's runtime-slices): ranks that agree on
  // those axes (dp replicas, unless ZeRO-3 splits the weights over dp) run
  // the same program, written once, in the first such rank's folder; the
  // others' plan entries point at it.
  const std::string runtimeSliceAxes = "dp";
  std::set<std::string> usedAxes;
  for (const Node *n : g.nodes()) {
    if (n->is("ShardSlice", "partita") && n->stringAttr("axis", "") != runtimeSliceAxes)
      usedAxes.insert(n->stringAttr("axis", ""));
    if (n->is("Weight") && n->output()->sharding()) {
      // A flat part's block over dp is placed as the program loads (localize).
      const WeightRef *ref = g.weights.find(n->stringAttr("name", ""));
      for (const auto &axes : n->output()->sharding()->dims)
        for (const std::string &axis : axes)
          if (axis != runtimeSliceAxes || materializeWeights || !ref || !ref->placeableAtLoad())
            usedAxes.insert(axis);
    }
    // Localize gives a vocab-parallel lookup and an embedding gradient the
    // offset of the rank's rows.
    const Value *rows = n->is("Gather") ? n->input(0) : n->is("EmbeddingGrad", "partita") ? n->output() : nullptr;
    if (rows && rows->sharding() && !rows->sharding()->dims.empty())
      usedAxes.insert(rows->sharding()->dims[0].begin(), rows->sharding()->dims[0].end());
  }
  if (pp > 1) // each stage has programs of its own
    usedAxes.insert("pp");
  std::map<std::string, const RankPlan *> written;
  std::map<int64_t, ParamRecord> params;
  // Large constants (a causal mask every stage's programs read) once per
  // plan, beside the rank folders; a materialized plan stays plain ONNX.
  llvm::SmallString<256> constantsPath(dir);
  llvm::sys::path::append(constantsPath, kSharedConstantsFile);
  SharedConstants shared(std::string(constantsPath), std::string("../") + kSharedConstantsFile);
  for (RankPlan &r : plan.ranks) {
    std::string key;
    for (const MeshAxis &a : g.mesh.axes)
      if (usedAxes.count(a.name) && g.mesh.numDevices() > 1)
        key += a.name + ":" + std::to_string(r.coords.at(a.name)) + ",";
    if (auto it = written.find(key); it != written.end()) {
      r.programs = it->second->programs;
      r.sha256 = it->second->sha256;
      continue;
    }
    llvm::SmallString<256> rankDir(dir);
    llvm::sys::path::append(rankDir, "rank" + std::to_string(r.rank));
    if (auto ec = llvm::sys::fs::create_directories(rankDir))
      return fail("cannot create " + rankDir + ": " + ec.message());
    // The rank's stages: one, or one per model chunk (s, s + pp, ...).
    for (int64_t k = 0, first = pp > 1 ? r.coords.at("pp") : 0; k < virtualStages; ++k)
    for (const NamedProgram &program : stageSplits[first + k * pp].programs) {
      const int64_t stage = first + k * pp;
      const std::string name = chunkProgram(program.name, stage, plan);
      std::unique_ptr<Graph> local = cloneGraph(*program.graph);
      if (g.mesh.numDevices() == 1) {
        local->mesh = Mesh(); // nothing is sharded: the program is the global one
      } else { // the rank's coordinates on the mesh axes
        std::string coords;
        for (const MeshAxis &a : g.mesh.axes)
          coords += (coords.empty() ? "" : ",") + a.name + ":" + std::to_string(r.coords.at(a.name));
        PassManager lpm;
        lpm.verifyEach = true;
        if (auto err = lpm.addPipeline("localize{coords=" + coords + ",runtime-slices=" + runtimeSliceAxes +
                                       (materializeWeights ? "" : ",place-at-load=" + runtimeSliceAxes) + "}"))
          return err;
        if (auto err = lpm.run(*local))
          return err;
      }
      std::string rel = "rank" + std::to_string(r.rank) + "/" + name + ".onnx";
      llvm::SmallString<256> onnxPath(dir), irPath(rankDir);
      llvm::sys::path::append(onnxPath, rel);
      llvm::sys::path::append(irPath, name + ".pir");
      if (auto err = writeText(irPath, *local))
        return err;
      ExportOptions eo;
      if (program.name == "forward" || program.name == optimizer_io::kStep) {
        // The programs with weights (the step's: mixed precision's master
        // copies): never in the protobuf (its limit is 2 GB); a second
        // chunk's beside the first's.
        std::string base = program.name == "forward" ? "weights" : "master_weights";
        eo.externalDataFile = base + (k == 0 ? "" : "." + std::to_string(k)) + ".bin";
        eo.weightsByReference = !materializeWeights;
      }
      if (!materializeWeights)
        eo.sharedConstants = &shared;
      if (program.name == optimizer_io::kBackward)
        if (auto err = recordParameters(unpartitioned ? *unpartitioned : g, g, *local, r, stage, params))
          return err;
      r.programs[name] = rel;
      plan.programIO[rel] = ProgramIO{specsOf(local->inputs()), specsOf(local->outputs())};
      if (auto err = exportOnnx(*local, onnxPath, eo))
        return err;
      if (auto err = recordProgramHash(r, dir, rel))
        return err;
    }
    // The shards exported beside the programs (none when every weight is
    // read by reference): the forward's weights.bin, and the step's
    // master_weights.bin (mixed precision's masters).
    for (int64_t k = 0; k < virtualStages; ++k) {
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
    written[key] = &r;
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
  planParameters(params, pp > 1, plan);
  if (!materializeWeights) { // the model's files the programs refer to, as they are now
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
  llvm::SmallString<256> planPath(dir);
  llvm::sys::path::append(planPath, "plan.json");
  if (auto err = writePlan(plan, planPath))
    return err;
  if (printIR)
    printGraph(g, llvm::outs());
  llvm::outs() << "partita: compiled " << model << " for " << mesh.str() << " (" << plan.worldSize()
               << " rank" << (plan.worldSize() == 1 ? "" : "s") << ") -> " << llvm::StringRef(outDir).rtrim('/') << "/\n";
  for (const auto &c : plan.coverage)
    llvm::outs() << "  " << c << "\n";
  if (differentiate) {
    size_t trainable = 0;
    for (const ParameterClass &c : classes)
      trainable += c.trainable;
    llvm::outs() << "  initializers: " << trainable << " trainable, " << classes.size() - trainable << " frozen\n";
    for (const ParameterClass &c : classes)
      if (!c.trainable)
        llvm::outs() << "    frozen " << c.name << ": " << c.reason << "\n";
  }
  return llvm::Error::success();
}

int compileMain() {
  auto ds = useDsConfigForCompile(dsConfig, compileCmd, dp); // sets the flags the file maps to
  if (!ds)
    return reportError("partita compile", ds.takeError());
  auto staged = StagedOutput::begin(outDir, "compile", "-o", {model.getValue()});
  if (!staged)
    return reportError("partita compile", staged.takeError());
  if (auto err = compile(staged->path()))
    return reportError("partita compile", std::move(err)); // the staging folder goes, an earlier output stays
  if (auto err = checkDsCompiledBatch(*ds, staged->path()))
    return reportError("partita compile", std::move(err));
  if (auto err = staged->commit())
    return reportError("partita compile", std::move(err));
  return 0;
}

} // namespace partita
