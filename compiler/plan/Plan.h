//===- Plan.h - out/plan.json: the mesh, the ranks and their programs -----===//
#pragma once
#include "compiler/ir/Graph.h"
#include "compiler/onnx/OnnxImport.h"
#include "compiler/plan/AdamWOptions.h"
#include "compiler/plan/Names.h"
#include "llvm/Support/Error.h"
#include <map>

namespace partita {

struct TensorSpec {
  std::string name;
  TensorType type;
};

/// One initializer's classification (passes/ClassifyParameters.h): a
/// parameter (trained) or a frozen buffer, and why.
struct InitializerClass {
  std::string name;
  bool trainable = true;
  std::string reason;
};

/// Where a trained parameter goes in the input model: initializer
/// `initializer` seen as transpose(stored, perm) (perm empty: as stored), the
/// box of `shape` at `start` (start empty: the whole of it). A fused q/k/v
/// piece is a box; a Gemm transB weight is a transpose; an embedding with a
/// tied head has a second target, the head (the embedding's transpose).
struct ParamTarget {
  std::string initializer;
  std::vector<int64_t> perm;
  Shape start;
  Shape shape; // the whole parameter's shape (the shards concatenated)
  /// [dim, block, times] when the parameter repeats each `block`-wide block of
  /// the initializer's box along `dim` `times` times (replicate-kv-heads'
  /// copies of a kv head): merge writes one copy, after checking they agree.
  std::vector<int64_t> repeat;
  /// The initializer's shape as stored (empty: unknown, a plan of an older
  /// Partita): checkpoints place the parameter's state in it.
  Shape stored;
};

/// A file of the model's own weights that the rank programs refer to (a plan
/// compiled by reference), with what it was at compile time: a launch
/// refuses it when it has changed since.
struct WeightFile {
  std::string path; // absolute
  uint64_t size = 0;
  int64_t mtimeNs = 0;
};

struct RankPlan {
  int64_t rank = 0;
  std::map<std::string, int64_t> coords; // mesh axis -> coordinate
  /// The rank's programs: name ("forward"; a training plan adds "backward",
  /// "grad_norm" and "step") -> path relative to the plan's folder.
  std::map<std::string, std::string> programs;
  /// SHA-256 (hex) of each program file, keyed by its path: a rank refuses a
  /// program that is not the one compiled for it. The programs' own weights
  /// file (rankWeightsFile) is one of them: it holds the rank's shards.
  std::map<std::string, std::string> sha256;
  /// The path of program `name`, or "" when the rank has none.
  std::string program(llvm::StringRef name) const {
    auto it = programs.find(name.str());
    return it == programs.end() ? std::string() : it->second;
  }
};

/// A program's inputs and outputs (plan.json `program_io`, by program file).
struct ProgramIO {
  std::vector<TensorSpec> inputs, outputs;
};

/// The plan format this Partita writes and reads (plan.json `format`).
inline constexpr const char *kPlanFormatName = "partita-plan-3";

struct Plan {
  Mesh mesh;
  std::vector<RankPlan> ranks;
  /// Per mesh axis, the rank groups that communicate along it.
  std::map<std::string, std::vector<std::vector<int64_t>>> groups;
  std::vector<TensorSpec> inputs, outputs;
  std::vector<std::string> coverage;
  /// Each program file's inputs and outputs.
  std::map<std::string, ProgramIO> programIO;
  /// What a rank runs per step: "inference" (forward) or
  /// "gradient-accumulation" (forward and backward per micro-batch, then
  /// grad_norm and step), the programs in that order.
  std::string schedule = "inference";
  std::vector<std::string> scheduleOrder{kForwardProgram};
  /// Training plans: the forward outputs the backward reads (activations
  /// saved between a micro-batch's forward and its backward).
  std::vector<std::string> saved;
  /// Training plans: the weights the step program updates, in the order of
  /// the forward program's gradient outputs (grad.<name>); the optimizer
  /// programs' inputs and outputs are named after them (optimizer_io).
  std::vector<std::string> params;
  /// Per param: the dtype and shape of one rank's shard (what the step
  /// program updates and launch writes; merge checks the files against it).
  std::vector<TensorType> paramTypes;
  /// Per param: whether each rank holds only its ZeRO-3 part of the shard's
  /// flat buffer (launch gathers the parts over dp to write the shard).
  /// Empty: none does.
  std::vector<bool> paramPartitioned;
  /// Per param: the pipeline stage that holds it (a global stage: with
  /// virtual stages, a model chunk of the ranks at pp coordinate stage %
  /// pp). Empty: no pipeline (every rank holds a shard of every parameter).
  std::vector<int64_t> paramStages;
  /// Per param: its layout on every mesh axis ("R", "S(d)"), axis -> layout.
  std::vector<std::map<std::string, std::string>> paramLayouts;
  /// Per param: where `partita merge` writes it (at least one target).
  std::vector<std::vector<ParamTarget>> paramTargets;
  /// The model's external data files the programs read by reference.
  std::vector<WeightFile> weightFiles;
  std::vector<std::string> weightFilePaths() const {
    std::vector<std::string> out;
    for (const WeightFile &f : weightFiles)
      out.push_back(f.path);
    return out;
  }
  /// Training plans: the optimizer the step programs apply.
  AdamWOptions optimizer;
  /// Training plans: the vocabulary the loss ranges over (0: unknown).
  int64_t vocab = 0;
  /// Training plans: the ZeRO stage compiled (compile --zero; 0: none).
  int64_t zero = 0;
  /// Integer inputs that index an embedding table, and the table's rows: a
  /// launch refuses ids outside [0, rows) (a vocab-parallel lookup would hide
  /// them behind its mask).
  std::map<std::string, int64_t> indexRanges;
  /// Training plans: every initializer, trainable or frozen, with the reason
  /// (compile's default rule, then --freeze / --trainable).
  std::vector<InitializerClass> initializers;

  /// Pipeline plans: the values one stage's programs send to another's
  /// (plan.json `pipeline_edges`); edge i is sent with message tag i.
  struct Edge {
    std::string value;
    int64_t from = 0, to = 0; // stages
  };
  std::vector<Edge> pipelineEdges;
  /// Trained weights stages `from` and `to` both hold (a tied embedding):
  /// stage `from`'s `value` and stage `to`'s copy sharedWeightCopy(value,
  /// to), each updated by its own stage from the sum of both gradients,
  /// which the two exchange before the optimizer step (plan.json
  /// `pipeline_weights`; tag: pipelineEdges.size() + its index).
  std::vector<Edge> pipelineWeights;
  /// Pipeline plans: the model chunks each rank holds (compile
  /// --virtual-stages; interleaved 1F1B): rank s of pp holds stages s,
  /// s + pp, ... of pp x virtualStages.
  int64_t virtualStages = 1;
  /// Training: the activations' and gradients' precision (compile
  /// --precision): "fp32", or "bf16" / "fp16" (mixed precision, fp32 master
  /// weights; fp16's backward takes a loss_scale input).
  std::string precision = "fp32";

  int64_t worldSize() const { return static_cast<int64_t>(ranks.size()); }
  /// The number of pipeline stages (the mesh's pp axis; 1 without one).
  int64_t stages() const {
    const MeshAxis *a = mesh.find(mesh_axis::kPipeline);
    return a ? a->size : 1;
  }
  /// The pipeline's stages counting every model chunk: pp x virtual stages.
  int64_t globalStages() const { return stages() * virtualStages; }
};

/// Stage `stage`'s copy of trained weight `weight` that an earlier stage
/// holds too (copy-shared-weights; Plan::pipelineWeights).
inline std::string sharedWeightCopy(llvm::StringRef weight, int64_t stage) {
  return weight.str() + ".stage" + std::to_string(stage);
}
/// The Weight attribute naming the weight a stage's copy is of.
inline constexpr const char *kCopyOfAttr = "copy_of";
/// Whether parameter `name` is a stage's copy of another (not written out:
/// the weight it copies is).
bool isSharedWeightCopy(const Plan &p, llvm::StringRef name);

/// The name, among its rank's programs, of program `base` ("forward") of
/// global stage `stage`: `base` for the rank's first model chunk, `base.k`
/// for chunk k (virtual stages).
std::string chunkProgram(llvm::StringRef base, int64_t stage, const Plan &p);

/// Ranks laid out row-major over the mesh axes; groups per axis.
Plan makePlan(const Mesh &mesh);
llvm::Error writePlan(const Plan &p, llvm::StringRef path);
llvm::Expected<Plan> readPlan(llvm::StringRef path);

/// The size and modification time of `path` now (false: it cannot be read).
bool statWeightFile(llvm::StringRef path, WeightFile &out);
/// Every weight file is still what it was at compile time; the error names
/// the file and says what to do.
llvm::Error checkWeightFiles(const Plan &p);

/// How a rank imports a program of a compiled plan (its hash checked against
/// plan.json first): its weights may refer to the original model's files.
/// `coordinates` (the rank's, by mesh axis) place the parts of weights the
/// ranks along an axis share a program for (FlatPart::byAxis); without them
/// a program is typed and sized as coordinate 0's.
ImportOptions compiledProgramImport(llvm::ArrayRef<std::string> weightFiles,
                                    const std::map<std::string, int64_t> &coordinates = {});

/// SHA-256 of a file's bytes, as lowercase hex.
llvm::Expected<std::string> sha256File(llvm::StringRef path);
/// Records the hash of `rank`'s program `rel` (relative to `dir`).
llvm::Error recordProgramHash(RankPlan &rank, llvm::StringRef dir, llvm::StringRef rel);
/// Checks that rank `r`'s program `rel` in `dir` is the one compiled for it
/// (reading the file, or hashing `bytes` when the caller has read it).
llvm::Error checkProgramHash(const RankPlan &r, llvm::StringRef dir, llvm::StringRef rel,
                             llvm::Optional<llvm::StringRef> bytes = llvm::None);
/// The external data file beside rank `r`'s forward program (relative to the
/// plan's folder), where compile writes the shards not read by reference.
std::string rankWeightsFile(const RankPlan &r);
/// The plan's large constants, shared by every rank's programs (relative to
/// the plan's folder; SharedConstants in compiler/onnx/OnnxExport.h).
inline constexpr const char *kSharedConstantsFile = "constants.bin";
/// Checks all of rank `r`'s files against the plan: its programs and, when
/// it exists or the plan records one, its weights file (a rank folder's
/// weights.bin swapped for another rank's would otherwise run with the wrong
/// shards). `forwardBytes`: the forward program when the caller has read it.
llvm::Error checkRankFiles(const RankPlan &r, llvm::StringRef dir,
                           llvm::Optional<llvm::StringRef> forwardBytes = llvm::None);

} // namespace partita
