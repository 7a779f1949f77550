//===- CompileCommand.cpp - partita compile -------------------------------===//
//
// model.onnx -> out/plan.json, out/global.pir (the sharded global IR) and
// out/rank<k>/forward.onnx (+ forward.pir) for every rank. The flags become
// CompileOptions and the library compiles (driver/Compile.h); this file maps
// flags, stages the output and prints the summary. Everything is written to a
// staging folder and moved into place when complete (tools/OutputDir.h: a
// failure leaves no partial output, and a folder Partita did not write is
// never replaced).
//===----------------------------------------------------------------------===//
#include "compiler/ir/Printer.h"
#include "driver/Compile.h"
#include "tools/Commands.h"
#include "tools/DsConfig.h"
#include "tools/OutputDir.h"
#include "tools/ToolCommon.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

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

/// The options the flags (and a DeepSpeed config, which sets flags) give.
static CompileOptions optionsFromFlags() {
  CompileOptions o;
  o.model = model;
  o.inputShapes = inputShapes;
  o.tp = tp;
  o.pp = pp;
  o.dp = dp;
  o.virtualStages = virtualStages;
  o.ppLayers = ppLayers;
  o.ppCuts = ppCuts;
  o.sequenceParallel = sequenceParallel;
  o.allowReplicated = allowReplicated;
  o.train = train;
  o.emitGradients = emitGradients;
  o.recompute = recompute;
  o.precision = precision;
  o.zero = zero;
  o.adamw = AdamWOptions{adamBeta1, adamBeta2, adamEps, weightDecay};
  o.freeze = freezePatterns;
  o.trainable = trainablePatterns;
  o.trainableFile = trainableFile;
  o.tieEmbeddings = tieEmbeddings;
  o.untieEmbeddings = untieEmbeddings;
  o.bucketMb = bucketMb;
  o.allgatherBucketMb = allgatherBucketMb;
  if (zero3Prefetch.getNumOccurrences())
    o.zero3Prefetch = zero3Prefetch;
  if (zero3Persist.getNumOccurrences())
    o.zero3Persist = zero3Persist;
  o.materializeWeights = materializeWeights;
  o.diagnostic = [](const std::string &line) { llvm::errs() << "partita compile: " << line << "\n"; };
  return o;
}

static llvm::Error compile(llvm::StringRef dir) {
  auto compiled = compileModel(optionsFromFlags());
  if (!compiled)
    return compiled.takeError();
  if (auto err = writeCompiledPlan(*compiled, dir))
    return err;
  const Graph &g = *compiled->global;
  const Plan &plan = compiled->plan;
  const Mesh &mesh = g.mesh;
  const std::vector<ParameterClass> &classes = compiled->initializers;
  bool differentiate = train || emitGradients;
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
