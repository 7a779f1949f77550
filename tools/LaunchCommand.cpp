//===- LaunchCommand.cpp - partita launch and the per-rank worker ---------===//
//
// `partita launch -n N out/` checks the artifacts (plan world size, rank
// folders, every program parses) before any rank starts, then runs N workers
// through mpirun (with the flags it needs as root and to oversubscribe the
// cores), or in place when it already runs under mpirun/Slurm. A worker that
// fails prints its rank and error and aborts the job, so the launch exits
// non-zero instead of hanging. Each rank writes its parameter shards into the
// staged output folder, rank 0 the rest (tools/OutputDir.h).
//===----------------------------------------------------------------------===//
#include "compiler/plan/Plan.h"
#include "runtime/comm/Communicator.h"
#include "runtime/comm/HeapSettings.h"
#include "runtime/core/DeviceRegistry.h"
#include "runtime/io/Npy.h"
#include "runtime/comm/PendingSends.h"
#include "runtime/core/DeviceTensor.h"
#include "runtime/train/TraceLog.h"
#include "runtime/schedule/PipelineSchedule.h"
#include "runtime/session/InputRoles.h"
#include "runtime/session/Session.h"
#include "runtime/train/TokenFile.h"
#include "runtime/train/Trainer.h"
#include "tools/Commands.h"
#include "tools/CrossMemoryAttach.h"
#include "tools/DsConfig.h"
#include "tools/Hostfile.h"
#include "runtime/checkpoint/SavedCheckpoint.h"
#include "tools/OutputDir.h"
#include "tools/ReplicaInference.h"
#include "tools/MicroBatches.h"
#include "tools/ToolCommon.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"
#include "onnx/onnx_pb.h"
#include <cmath>
#include <cstdlib>
#include <optional>
#include <set>
#include <mpi.h>
#include <omp.h>
#include <thread>
#include <unistd.h>
#include <csignal>
#include <cstring>
#include <fcntl.h>

namespace cl = llvm::cl;

namespace partita {

/// Everything a launch is asked, parsed straight from its flags: the
/// launcher's own, then the training run's (rt::TrainOptions). The defaults
/// are the structs'.
struct LaunchOptions {
  int worldSize = 0;
  std::string planDir, outDir;
  std::vector<std::string> inputs; // NAME=FILE.npy
  int threads = 0, repeat = 1;
  double collectiveTimeout = rt::kDefaultCollectiveTimeout;
  std::string rankStatusDir, stagingDir;
  std::string hostfile;
  std::string device = rt::kDefaultDevice;
  bool checkHost = false; // a worker that checks its host's files instead of running a rank
  rt::TrainOptions train;
};
static LaunchOptions opts;

static cl::SubCommand launchCmd("launch", "Run the ranks of a compiled model");
// The worker is one rank of a launch: it takes the launch's own options (the
// launcher forwards its command line), declared once for both subcommands.
static cl::SubCommand workerCmd("worker", "(internal) one rank of a launch");
#define BOTH cl::sub(launchCmd), cl::sub(workerCmd)
static Flag<int> worldSize("n", cl::desc("Number of ranks"), cl::location(opts.worldSize), cl::sub(launchCmd),
                           cl::Required);
static Flag<std::string> planDir(cl::Positional, cl::desc("<out/>"), cl::location(opts.planDir), BOTH, cl::Required);
static cl::list<std::string, std::vector<std::string>> inputs("input", cl::desc("An input: NAME=FILE.npy"),
                                                              cl::location(opts.inputs), BOTH);
static Flag<std::string> outDir("output-dir",
                                cl::desc("Folder for the outputs (required; new or one an earlier launch wrote): "
                                         "inference outputs, or loss.csv and each rank's trained parameter shards"),
                                cl::location(opts.outDir), BOTH, cl::Required);
static Flag<int> threads("threads", cl::desc("Threads per rank (default: cores / ranks, at least 1)"),
                         cl::location(opts.threads), BOTH);
static Flag<int> repeat("repeat", cl::desc("Run this many times; rank 0 prints the median time"),
                        cl::location(opts.repeat), BOTH);
static Flag<std::string> device("device", cl::desc("The device every rank runs its programs on (default cpu)"),
                                cl::value_desc("NAME"), cl::location(opts.device), BOTH);
static Flag<int> steps("steps", cl::desc("Training steps (a --train plan)"), cl::location(opts.train.steps), BOTH);
static Flag<std::string> data("data", cl::desc("Token ids: .npy, or a flat uint16 .bin (nanoGPT)"),
                              cl::location(opts.train.data), BOTH);
static Flag<std::string> dataDtype("data-dtype",
                                   cl::desc("Token id type of a flat --data file: uint16 (nanoGPT) or int32"),
                                   cl::location(opts.train.dataDtype), BOTH);
static Flag<int> batch("batch", cl::desc("Sequences per step"), cl::location(opts.train.batch), BOTH);
static Flag<int> seq("seq", cl::desc("Tokens per sequence"), cl::location(opts.train.seq), BOTH);
static Flag<double> lr("lr", cl::desc("AdamW learning rate"), cl::location(opts.train.lr), BOTH);
static Flag<int> seed("seed", cl::desc("Seed of the batch sampler"), cl::location(opts.train.seed), BOTH);
static Flag<int> microBatches("micro-batches", cl::desc("Micro-batches accumulated per step"),
                              cl::location(opts.train.microBatches), BOTH);
static Flag<std::string> trace("trace",
                               cl::desc("Write a Chrome/Perfetto trace of every rank's steps to FILE (a --train plan)"),
                               cl::value_desc("FILE"), cl::location(opts.train.trace), BOTH);
static Flag<std::string> pipelineSchedule("schedule",
                                          cl::desc("A pipeline plan's schedule: 1f1b (default), gpipe, or interleaved (a plan "
                                                   "compiled with --virtual-stages V > 1; 1f1b runs it too)"),
                                          cl::location(opts.train.schedule), BOTH);
static Flag<std::string> schedule("lr-schedule", cl::desc("constant, linear or cosine (after warmup)"),
                                  cl::location(opts.train.lrSchedule.shape), BOTH);
static Flag<int> warmup("warmup-steps", cl::desc("Linear warmup steps"), cl::location(opts.train.lrSchedule.warmup),
                        BOTH);
static Flag<double> minLrRatio("min-lr-ratio", cl::desc("Final learning rate / --lr for linear/cosine decay"),
                               cl::location(opts.train.lrSchedule.minLrRatio), BOTH);
static Flag<double> clipNorm("clip-grad-norm", cl::desc("Clip the global gradient norm to this (0: off)"),
                             cl::location(opts.train.clipNorm), BOTH);
// fp16 loss scaling (a plan compiled with --precision fp16), DeepSpeed's fp16 keys.
static Flag<double> lossScale("loss-scale",
                              cl::desc("fp16: a static loss scale; 0 (default): dynamic, from "
                                       "2^--initial-scale-power"),
                              cl::location(opts.train.lossScale.staticScale), BOTH);
static Flag<int> initialScalePower("initial-scale-power",
                                   cl::desc("fp16: the dynamic loss scale starts at 2^this (default 16)"),
                                   cl::location(opts.train.lossScale.initialScalePower), BOTH);
static Flag<int64_t> lossScaleWindow("loss-scale-window",
                                     cl::desc("fp16: steps without an overflow before the scale doubles "
                                              "(default 1000)"),
                                     cl::location(opts.train.lossScale.window), BOTH);
static Flag<int> hysteresis("hysteresis",
                            cl::desc("fp16: overflows before the dynamic scale halves (default 2)"),
                            cl::location(opts.train.lossScale.hysteresis), BOTH);
static Flag<double> minLossScale("min-loss-scale", cl::desc("fp16: the dynamic scale's floor (default 1)"),
                                 cl::location(opts.train.lossScale.minScale), BOTH);
// Checkpoints (runtime/checkpoint/Checkpoint.h).
static Flag<std::string> saveDir("save",
                                 cl::desc("Save the training state into DIR/step-N/ after the last step and every "
                                          "--save-interval steps (DIR new, empty or an earlier --save's; it keeps "
                                          "the checkpoints when the run fails)"),
                                 cl::value_desc("DIR"), cl::location(opts.train.save), BOTH);
static Flag<int> saveInterval("save-interval", cl::desc("With --save: a checkpoint every this many steps"),
                              cl::location(opts.train.saveInterval), BOTH);
static Flag<int> keep("keep",
                      cl::desc("With --save: keep the newest this many checkpoints of this run (default: all); "
                               "older ones this run wrote are removed"),
                      cl::location(opts.train.keep), BOTH);
static Flag<bool> blockingSave("blocking-save",
                               cl::desc("With --save: write each checkpoint before the next step (default: copy the "
                                        "state and write it in the background while training goes on)"),
                               cl::location(opts.train.blockingSave), BOTH);
static Flag<std::string> resumeFrom("resume",
                                    cl::desc("Go on from a checkpoint (DIR/step-N), or the latest in DIR, under this "
                                             "plan's layout whatever the checkpoint's; --steps stays the run's total"),
                                    cl::value_desc("PATH"), cl::location(opts.train.resume), BOTH);
static Flag<bool> skipNonfinite("skip-nonfinite",
                                cl::desc("Skip the update of a step whose loss or gradient norm is not finite "
                                         "(default: stop)"),
                                cl::location(opts.train.skipNonfinite), BOTH);
static Flag<bool> progressBar("progress-bar",
                              cl::desc("Redraw one progress bar instead of a line per step (default: when the "
                                       "launch's output is a terminal)"),
                              cl::location(opts.train.progressBar), BOTH);
static Flag<bool> profile("profile",
                          cl::desc("Rank 0 prints where a training step's time goes (phases, then per op type)"),
                          cl::location(opts.train.profile), BOTH);
static Flag<bool> profileByNode("profile-by-node", cl::desc("With --profile: time per node, not per op type"),
                                cl::location(opts.train.profileByNode), BOTH);
static Flag<bool> memory("memory",
                         cl::desc("Each rank prints its memory by category after training, as the runtime counted "
                                  "it: parameters, gradients, optimizer states, activations, communication buffers, "
                                  "workspace, and the peak (partita inspect predicts the same line)"),
                         cl::location(opts.train.memory), BOTH);
static Flag<bool> noOverlap("no-overlap",
                            cl::desc("Finish each gradient bucket's all-reduce where it starts instead of "
                                     "overlapping it with the rest of the backward pass (for measuring the overlap)"),
                            cl::location(opts.train.noOverlap), BOTH);
static Flag<bool> offloadOptimizer(
    "offload-optimizer",
    cl::desc("Run the optimizer step on the host CPU (DeepSpeed's offload_optimizer {device: cpu}): the fp32 "
             "masters, AdamW's moments and the update in host memory; gradients copied down and parameters up "
             "each step. Same results as without it"),
    cl::location(opts.train.offloadOptimizer), BOTH);
static Flag<double> collectiveTimeout("collective-timeout",
                                      cl::desc("Seconds a collective or receive may wait; then the rank names the "
                                               "ranks that have not arrived and the launch stops (0: no limit)"),
                                      cl::location(opts.collectiveTimeout), BOTH);
// Each rank records its pid and how it ended there (see recordStatus).
static Flag<std::string> rankStatusDir("rank-status-dir", cl::desc("(internal) where each rank records its pid"),
                                       cl::location(opts.rankStatusDir), cl::Hidden, BOTH);
// The gradient buckets are made at compile time now (compile --bucket-mb); a
// launch that asks for a size is refused rather than silently ignored.
static cl::opt<double> bucketMb("bucket-mb", cl::desc("(compile --bucket-mb now) gradient bucket size"), cl::Hidden,
                                cl::init(-1), BOTH);
static Flag<std::string> idsInput("ids-input",
                                  cl::desc("The input that takes the token ids (default: the one integer "
                                           "[batch, seq] input besides labels, attention_mask, position_ids)"),
                                  cl::location(opts.train.idsInput), BOTH);
static cl::opt<std::string> dsConfig("ds-config",
                                     cl::desc("A DeepSpeed config: its keys set the training flags they map to "
                                              "(README); a flag given here overrides the file"),
                                     cl::value_desc("FILE"), BOTH);
static Flag<std::string> hostfile(
    "hostfile",
    cl::desc("Run across the hosts of FILE (Open MPI's format: `HOST slots=N` per line): ranks placed host by host, "
             "each tensor-parallel group inside one host. The plan, its weight files, --data and --input files must be "
             "at the same paths on every host (checked on each before any rank starts), --output-dir on a "
             "filesystem they share"),
    cl::value_desc("FILE"), cl::location(opts.hostfile), BOTH);
static Flag<bool> checkHost("check-host", cl::desc("(internal) check this host's files and exit"),
                            cl::location(opts.checkHost), cl::Hidden, cl::sub(workerCmd));
// The staging folder the launcher made for the outputs (tools/OutputDir.h).
static Flag<std::string> stagingDir("staging-dir", cl::desc("(internal) where the ranks write"),
                                    cl::location(opts.stagingDir), cl::Hidden, cl::sub(workerCmd));
#undef BOTH

bool launchSelected() { return static_cast<bool>(launchCmd); }
bool workerSelected() { return static_cast<bool>(workerCmd); }

/// Everything that can be checked before a rank starts.
static llvm::Expected<Plan> checkArtifacts(llvm::StringRef dir, int n) {
  auto plan = readPlan(inDir(dir, "plan.json"));
  if (!plan)
    return plan.takeError();
  if (plan->worldSize() != n)
    return fail(dir + ": the plan is for " + llvm::Twine(plan->worldSize()) + " ranks (" + plan->mesh.str() +
                "), but -n " + llvm::Twine(n) + " was given");
  std::set<std::string> checked;
  for (const RankPlan &r : plan->ranks) {
    if (!checked.insert(r.program(kForwardProgram)).second)
      continue; // a dp replica's program, checked with the first rank that runs it
    std::string path = inDir(dir, r.program(kForwardProgram));
    auto buf = llvm::MemoryBuffer::getFile(path);
    if (!buf)
      return fail("rank " + llvm::Twine(r.rank) + ": missing program " + path);
    onnx::ModelProto m;
    if (!m.ParseFromArray((*buf)->getBufferStart(), static_cast<int>((*buf)->getBufferSize())))
      return fail("rank " + llvm::Twine(r.rank) + ": corrupt program " + path + " (not a valid ONNX model)");
    if (llvm::Error hashed = checkRankFiles(r, dir, (*buf)->getBuffer()))
      return fail("rank " + llvm::Twine(r.rank) + ": " + llvm::toString(std::move(hashed)));
  }
  if (auto err = checkWeightFiles(*plan))
    return err;
  return plan;
}

/// Token ids given with --input lie inside the table they index (a
/// vocab-parallel lookup masks ids outside its block, so without this an id
/// outside the vocabulary would give a result instead of an error).
static llvm::Error checkTokenInputs(const Plan &plan, const llvm::StringMap<Tensor> &tensors) {
  for (const auto &[name, rows] : plan.indexRanges) {
    auto it = tensors.find(name);
    if (it == tensors.end() || isFloat(it->second.dtype()))
      continue;
    const Tensor &t = it->second;
    for (int64_t i = 0, n = t.numel(); i < n; ++i) {
      int64_t id = t.intAt(i);
      if (id < 0 || id >= rows)
        return fail("--input " + name + ": id " + llvm::Twine(id) + " at flat index " + llvm::Twine(i) +
                    " is outside [0, " + llvm::Twine(rows) + "), the rows of the embedding table it indexes");
    }
  }
  return llvm::Error::success();
}

/// The flags of a launch, checked before any rank starts; each error names
/// its flag.
/// --save-interval, --keep and --blocking-save go with --save.
static llvm::Error checkCheckpointFlags() {
  const rt::TrainOptions &t = opts.train;
  for (const cl::Option *flag : std::initializer_list<const cl::Option *>{&saveInterval, &keep, &blockingSave})
    if (flag->getNumOccurrences() && t.save.empty())
      return fail("--" + flag->ArgStr + " needs --save DIR");
  if (t.saveInterval < 0 || t.keep < 0)
    return fail(llvm::Twine(t.keep < 0 ? "--keep " : "--save-interval ") +
                llvm::Twine(t.keep < 0 ? t.keep : t.saveInterval) + ": must be >= 0");
  return llvm::Error::success();
}

/// Before any rank starts: --resume's checkpoint leaves steps to train and
/// fits the plan and the run (every tensor the plan trains there in its
/// shape, every shard file there and whole, its pieces' hashes, the same
/// --seed and data); --save's folder takes the checkpoints this run will save.
static llvm::Error checkCheckpoints(const Plan &plan) {
  const rt::TrainOptions &t = opts.train;
  int64_t first = 0;
  if (!t.resume.empty()) {
    auto folder = rt::resolveCheckpoint(t.resume);
    if (!folder)
      return folder.takeError();
    auto saved = rt::SavedCheckpoint::open(*folder);
    if (!saved)
      return saved.takeError();
    first = saved->progress().step;
    if (first >= t.steps)
      return fail("--resume " + *folder + " is at step " + llvm::Twine(first) + ": --steps " + llvm::Twine(t.steps) +
                  " (the run's total) leaves nothing to train");
    auto tokens = TokenFile::open(t.data, t.dataDtype);
    if (!tokens)
      return tokens.takeError();
    if (auto err = saved->checkRun(t.seed, rt::CheckpointRun{t.data, tokens->size()}))
      return err;
    if (auto err = saved->checkPlan(plan))
      return err;
  }
  if (!t.save.empty())
    return rt::checkCheckpointDir(t.save, rt::checkpointSteps(first, t.steps, t.saveInterval));
  return llvm::Error::success();
}

static llvm::Error checkFlags(bool trainPlan, llvm::StringRef precision) {
  const rt::TrainOptions &t = opts.train;
  if (opts.threads < 0)
    return fail("--threads " + llvm::Twine(opts.threads) + ": must be >= 0 (0: cores / ranks)");
  if (opts.repeat < 1)
    return fail("--repeat " + llvm::Twine(opts.repeat) + ": must be >= 1");
  if (!trainPlan) {
    if (steps.getNumOccurrences())
      return fail("--steps needs a plan compiled with --train");
    // Refused, not silently ignored: an inference launch reads none of these.
    for (const cl::Option *flag : std::initializer_list<const cl::Option *>{
             &trace, &pipelineSchedule, &memory, &profile, &profileByNode, &noOverlap, &offloadOptimizer, &lr, &seed, &schedule,
             &warmup, &minLrRatio, &clipNorm, &skipNonfinite, &saveDir, &saveInterval, &keep, &resumeFrom, &blockingSave})
      if (flag->getNumOccurrences())
        return fail("--" + flag->ArgStr + " applies to training (a plan compiled with --train)");
    return llvm::Error::success();
  }
  if (repeat.getNumOccurrences())
    return fail("--repeat applies to inference; a training plan runs --steps");
  if (!steps.getNumOccurrences())
    return fail("the plan was compiled with --train: give --steps S (>= 1), --data FILE, --batch B and --seq T");
  if (precision != "fp16") // loss scaling exists only under fp16: refused, not silently ignored
    for (const cl::Option *flag : std::initializer_list<const cl::Option *>{
             &lossScale, &initialScalePower, &lossScaleWindow, &hysteresis, &minLossScale})
      if (flag->getNumOccurrences())
        return fail("--" + flag->ArgStr + " applies to fp16 training (a plan compiled with --precision fp16); this "
                    "plan's precision is " + precision);
  if (!t.trace.empty() && llvm::sys::fs::exists(t.trace))
    return fail("--trace " + t.trace + ": the file exists; remove it or name another (launch does not overwrite it)");
  if (!t.trace.empty()) { // found now, not after the run
    llvm::SmallString<256> folder(t.trace);
    llvm::sys::fs::make_absolute(folder);
    llvm::sys::path::remove_filename(folder);
    if (!llvm::sys::fs::is_directory(folder))
      return fail("--trace " + t.trace + ": the folder " + folder + " does not exist");
  }
  auto atLeastOne = [](const char *flag, int v) -> llvm::Error {
    if (v < 1)
      return fail(llvm::Twine(flag) + " " + llvm::Twine(v) + ": must be >= 1");
    return llvm::Error::success();
  };
  auto finiteAtLeast = [](const char *flag, double v, double lo, bool open) -> llvm::Error {
    if (!std::isfinite(v) || v < lo || (open && v == lo))
      return fail(llvm::Twine(flag) + " " + formatNumber(v) + ": must be a finite number " + (open ? "> " : ">= ") +
                  formatNumber(lo));
    return llvm::Error::success();
  };
  if (auto err = atLeastOne("--steps", t.steps))
    return err;
  if (t.data.empty())
    return fail("training needs --data FILE (token ids)");
  if (!batch.getNumOccurrences() || !seq.getNumOccurrences())
    return fail("training needs --batch B and --seq T (the shapes the plan was compiled for)");
  if (auto err = atLeastOne("--batch", t.batch))
    return err;
  if (auto err = atLeastOne("--seq", t.seq))
    return err;
  if (auto err = finiteAtLeast("--lr", t.lr, 0, false))
    return err;
  if (auto err = finiteAtLeast("--clip-grad-norm", t.clipNorm, 0, false))
    return err;
  const rt::LossScaleOptions &ls = t.lossScale;
  if (auto err = finiteAtLeast("--loss-scale", ls.staticScale, 0, false))
    return err;
  if (auto err = finiteAtLeast("--min-loss-scale", ls.minScale, 0, true))
    return err;
  if (ls.initialScalePower < 0 || ls.initialScalePower > 100)
    return fail("--initial-scale-power " + llvm::Twine(ls.initialScalePower) + ": must be in 0..100");
  if (ls.window < 1)
    return fail("--loss-scale-window " + llvm::Twine(ls.window) + ": must be >= 1");
  if (ls.hysteresis < 1)
    return fail("--hysteresis " + llvm::Twine(ls.hysteresis) + ": must be >= 1");
  if (bucketMb.getNumOccurrences())
    return fail("--bucket-mb is a compile option now (partita compile --bucket-mb MB): the program holds its "
                "gradient buckets");
  const rt::LrScheduleOptions &lrs = t.lrSchedule;
  if (lrs.warmup < 0)
    return fail("--warmup-steps " + llvm::Twine(lrs.warmup) + ": must be >= 0");
  if (!(lrs.minLrRatio >= 0 && lrs.minLrRatio <= 1))
    return fail("--min-lr-ratio " + formatNumber(lrs.minLrRatio) + ": must be in [0, 1]");
  if (lrs.shape != "constant" && lrs.shape != "linear" && lrs.shape != "cosine")
    return fail("--lr-schedule '" + lrs.shape + "': expected constant, linear or cosine");
  return checkCheckpointFlags();
}

/// What the launch reads: an output folder must not be or hold any of it.
static std::vector<std::string> launchInputs() {
  std::vector<std::string> in{opts.planDir, opts.train.data};
  for (const std::string &dir : {opts.train.save, opts.train.resume}) // never inside the output folder
    if (!dir.empty())
      in.push_back(dir);
  for (std::string &file : inputFilePaths(opts.inputs))
    in.push_back(std::move(file));
  return in;
}

/// A worker's status file, <rank-status-dir>/rank<k>: "pid P" when it starts,
/// "end ok|error|terminated" when it ends, each line one write(2). A rank
/// killed by a signal it cannot catch (SIGKILL) or one that crashed leaves no
/// end line: so the launcher can say which rank died. (mpirun names the rank
/// too, but as text for people, and with "PID 0".)
struct RankStatus {
  int pid = 0;
  std::string end; // empty: died without a word
};

static std::optional<RankStatus> readRankStatus(llvm::StringRef dir, int rank) {
  auto buf = llvm::MemoryBuffer::getFile(inDir(dir, "rank" + std::to_string(rank)));
  if (!buf)
    return std::nullopt;
  RankStatus st;
  llvm::SmallVector<llvm::StringRef> lines;
  (*buf)->getBuffer().split(lines, '\n', -1, false);
  for (llvm::StringRef line : lines) {
    auto [key, value] = line.split(' ');
    if (key == "pid")
      value.getAsInteger(10, st.pid);
    else if (key == "end" && st.end.empty()) // the first end is how it ended
      st.end = value.str();
  }
  return st;
}

/// "SIGKILL" for 9.
static std::string signalName(int sig) {
  const char *abbrev = sigabbrev_np(sig);
  return abbrev ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
}

/// The launcher's last line when the ranks failed: which ranks reported an
/// error, which died without one and how. mpirun exits with 128 + the signal
/// that killed the first rank to die; a worker run in place (under an outside
/// mpirun) reports its signal through ExecuteAndWait's message.
static std::string describeRankFailure(llvm::StringRef dir, int n, bool allRanks, int rc, llvm::StringRef errMsg) {
  int sig = 0;
  if (rc > 128 && rc < 128 + 65)
    sig = rc - 128;
  for (int s = 1; rc == -2 && !sig && s < 65; ++s)
    if (const char *text = strsignal(s); text && errMsg.startswith(text))
      sig = s;
  std::vector<std::string> reported, silent;
  for (int k = 0; k < n && !dir.empty(); ++k) {
    std::optional<RankStatus> st = readRankStatus(dir, k);
    if (!st && !allRanks)
      continue; // another launcher's rank
    if (!st)
      silent.push_back("rank " + std::to_string(k) + " (never started)");
    else if (st->end == "error")
      reported.push_back(std::to_string(k));
    else if (st->end.empty())
      silent.push_back("rank " + std::to_string(k) + " (pid " + std::to_string(st->pid) + ")");
  }
  std::string code = "exit code " + std::to_string(rc) + (errMsg.empty() ? "" : ": " + errMsg.str());
  std::string msg;
  if (silent.size() == 1 && sig)
    msg = silent[0] + " was killed by signal " + std::to_string(sig) + " (" + signalName(sig) + ")";
  else if (!silent.empty())
    msg = llvm::join(silent, ", ") + " ended without reporting an error (" + code +
          (sig ? "; the first to end was killed by " + signalName(sig) : "") + ")";
  if (!reported.empty())
    msg += (msg.empty() ? "the ranks failed (" + code + "); see" : "; and see") + std::string(" the error of rank") +
           (reported.size() > 1 ? "s " : " ") + llvm::join(reported, ", ") + " above";
  if (msg.empty())
    msg = "the ranks failed (" + code + ")";
  return msg;
}

/// After mpirun succeeded: the ranks that did not record a finished run
/// ("end ok" comes after MPI_Finalize), as the launcher's error; empty if none.
static std::string unfinishedRanks(llvm::StringRef dir, int n) {
  std::vector<std::string> missing;
  for (int k = 0; k < n; ++k) {
    std::optional<RankStatus> st = readRankStatus(dir, k);
    if (!st || st->end != "ok")
      missing.push_back(std::to_string(k));
  }
  if (missing.empty())
    return "";
  return std::string("rank") + (missing.size() > 1 ? "s " : " ") + llvm::join(missing, ", ") +
         " exited without finishing (no MPI_Finalize; mpirun reported success)";
}

/// Puts the staged output in place, after a training run with --trace
/// joining the ranks' parts (in the staged output) into the trace file. If
/// the join fails the parts stay in the output, which is committed all the
/// same: a trace that cannot be written does not cost the run's parameters.
static llvm::Error commitOutput(StagedOutput &staged, int ranks) {
  llvm::Error traced = llvm::Error::success();
  if (!opts.train.trace.empty() && opts.train.steps > 0) {
    std::string parts = rt::tracePartsDir(staged.path());
    if (auto err = rt::joinTrace(parts, ranks, opts.train.trace))
      traced = fail(llvm::toString(std::move(err)) + " (each rank's part of the trace is kept in " + opts.outDir +
                    "/" + llvm::sys::path::filename(parts) + ")");
  }
  if (auto err = staged.commit()) {
    llvm::consumeError(std::move(traced));
    return err;
  }
  return traced;
}

/// The worker's command line, with the launcher's own rank-status folder.
static std::vector<std::string> statusDirArgs(std::vector<std::string> workerArgs, const std::string &statusDir,
                                              bool own) {
  if (own && !statusDir.empty())
    workerArgs.push_back("--rank-status-dir=" + statusDir);
  return workerArgs;
}

/// --hostfile's hosts and where the plan's ranks go on them.
static llvm::Expected<std::vector<HostRanks>> placeFromHostfile(const Plan &plan) {
  auto text = llvm::MemoryBuffer::getFile(opts.hostfile);
  if (!text)
    return fail("--hostfile " + opts.hostfile + ": " + text.getError().message());
  auto hosts = parseHostfile((*text)->getBuffer(), opts.hostfile);
  if (!hosts)
    return hosts.takeError();
  int tp = 1;
  for (size_t i = 0; i < plan.mesh.axes.size(); ++i)
    if (plan.mesh.axes[i].name == mesh_axis::kTensor) {
      tp = static_cast<int>(plan.mesh.axes[i].size);
      // Ranks are row-major over the mesh: tp innermost keeps a group's ranks consecutive.
      if (tp > 1 && i + 1 != plan.mesh.axes.size())
        return fail("--hostfile: the plan's mesh (" + plan.mesh.str() +
                    ") does not have tp innermost, so its tp groups are not consecutive ranks to keep on a host");
    }
  return placeRanks(*hosts, plan.worldSize(), tp, opts.hostfile);
}

int launchMain(int argc, char **argv) {
  const char *tool = "partita launch";
  const int worldSize = opts.worldSize;
  if (worldSize < 1)
    return reportError(tool, fail("-n must be >= 1"));
  if (auto known = rt::DeviceRegistry::get().find(opts.device); !known) // before anything starts
    return reportError(tool, known.takeError());
  auto plan = checkArtifacts(opts.planDir, worldSize);
  if (!plan)
    return reportError(tool, plan.takeError());
  bool trainPlan = plan->schedule == "gradient-accumulation";
  if (auto err = useDsConfigForLaunch(dsConfig, launchCmd, *plan, opts.train, /*report=*/true))
    return reportError(tool, std::move(err));
  if (auto err = checkFlags(trainPlan, plan->precision))
    return reportError(tool, std::move(err));
  if (trainPlan)
    if (auto err = checkCheckpoints(*plan))
      return reportError(tool, std::move(err));
  if (trainPlan) // the schedule's name, and that it runs this plan's model chunks
    if (auto err = rt::checkPipelineSchedule(opts.train.schedule, plan->virtualStages))
      return reportError(tool, std::move(err));
  if (trainPlan)
    if (auto err = rt::checkMicroBatches(opts.train.microBatches, plan->stages(), plan->virtualStages))
      return reportError(tool, std::move(err));
  if (trainPlan && plan->stages() > opts.train.microBatches)
    llvm::errs() << "partita launch: warning: " << opts.train.microBatches << " micro-batch(es) on "
                 << plan->stages() << " pipeline stages: most stages wait most of the step (give --micro-batches >= "
                 << plan->stages() << "; the bubble is (p-1)/(m+p-1))\n";
  auto tensors = readInputFiles(opts.inputs);
  if (!tensors)
    return reportError(tool, tensors.takeError());
  if (auto err = checkTokenInputs(*plan, *tensors))
    return reportError(tool, std::move(err));
  if (!trainPlan) { // checked and said here, once; every worker fills the same inputs
    auto micro = splitMicroBatches(plan->inputs, *tensors);
    if (!micro)
      return reportError(tool, micro.takeError());
    if (micro->batches.size() > 1) {
      if (opts.repeat > 1)
        return reportError(tool, fail("--repeat " + llvm::Twine(opts.repeat) + " times one batch; the inputs hold " +
                                      llvm::Twine(micro->batches.size()) + " batches of the compiled shape"));
      llvm::outs() << "partita launch: the inputs hold " << micro->batches.size()
                   << " batches of the compiled shape: " << micro->batches.size()
                   << " micro-batches, the outputs concatenated on the batch\n";
    }
    auto filled = fillRoleInputs(plan->inputs, micro->batches[0]);
    if (!filled)
      return reportError(tool, filled.takeError());
    for (const std::string &line : *filled)
      llvm::outs() << "partita launch: " << line << "\n";
    llvm::outs().flush();
  }
  // Outside mpirun the launcher stages the output folder for its workers and
  // puts it in place when every rank succeeded; under an outside mpirun each
  // rank runs a launcher, which only checks the folder: rank 0's worker stages
  // it (see runRank).
  bool underMpi = std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMI_SIZE") || std::getenv("SLURM_PROCID");
  std::optional<StagedOutput> staged;
  if (underMpi) {
    if (auto err = checkOutputDir(opts.outDir, "launch", "--output-dir", launchInputs()))
      return reportError(tool, std::move(err));
  } else {
    auto s = StagedOutput::begin(opts.outDir, "launch", "--output-dir", launchInputs());
    if (!s)
      return reportError(tool, s.takeError());
    staged.emplace(std::move(*s));
  }
  if (trainPlan) {
    const rt::TrainOptions &t = opts.train;
    if (auto roles = trainingInputRoles(plan->inputs, t.idsInput, t.batch, t.seq); !roles)
      return reportError(tool, roles.takeError());
    auto tokens = TokenFile::open(t.data, t.dataDtype);
    if (!tokens)
      return reportError(tool, tokens.takeError());
    // Up to ~100M ids are checked here, before any rank starts; the ranks
    // check every sequence they draw.
    if (tokens->size() <= (int64_t{1} << 27))
      if (auto err = tokens->checkRange(plan->vocab))
        return reportError(tool, std::move(err));
  }
  // Across hosts (--hostfile): ranks host by host, whole tp groups per host.
  std::vector<HostRanks> placement;
  if (!opts.hostfile.empty()) {
    if (underMpi)
      return reportError(tool, fail("--hostfile: this launch already runs under mpirun or Slurm, which placed the "
                                    "ranks; drop --hostfile (or start partita launch outside them)"));
    auto placed = placeFromHostfile(*plan);
    if (!placed)
      return reportError(tool, placed.takeError());
    placement = std::move(*placed);
  }
  std::string self = llvm::sys::fs::getMainExecutable(argv[0], reinterpret_cast<void *>(&launchMain));
  std::vector<std::string> mpirunArgs;
  if (!underMpi) {
    auto mpirun = llvm::sys::findProgramByName("mpirun");
    if (!mpirun)
      return reportError(tool, fail("mpirun not found on PATH (install openmpi-bin)"));
    // Open MPI 4.x can see a rank's exit before its finalize under load and
    // then fails the job ("exiting improperly", PID 0; open-mpi/ompi#7833, not
    // fixed on 4.x). The launcher does not need mpirun's judgement there: each
    // rank records its own end, and a rank that exits 0 without "end ok" is
    // reported below.
    mpirunArgs = {*mpirun, "--allow-run-as-root", "--oversubscribe", "--bind-to", "none",
                  "--mca", "orte_allowed_exit_without_sync", "1"};
    // Large messages by one copy where the ranks may read each other's
    // memory (CrossMemoryAttach.h), else by vader's fragments; a user's
    // OMPI_MCA_btl_vader_single_copy_mechanism decides instead.
    if (!std::getenv("OMPI_MCA_btl_vader_single_copy_mechanism"))
      mpirunArgs.insert(mpirunArgs.end(),
                        {"--mca", "btl_vader_single_copy_mechanism", crossMemoryAttachWorks() ? "cma" : "none"});
  }
  // The workers get this command line as it was typed, less -n.
  std::vector<std::string> workerArgs = {self, "worker"};
  for (int i = 2; i < argc; ++i) {
    llvm::StringRef a(argv[i]);
    if (a == "-n" || a == "--n") {
      ++i;
      continue;
    }
    if (a.startswith("-n=") || a.startswith("--n="))
      continue;
    workerArgs.push_back(a.str());
  }
  if (staged)
    workerArgs.push_back("--staging-dir=" + staged->path());
  // Workers write through mpirun, which gives them a terminal even when the
  // user's output is a pipe: the launcher decides.
  if (isatty(fileno(stdout)) && progressBar.getNumOccurrences() == 0)
    workerArgs.push_back("--progress-bar");
  if (opts.threads == 0) { // the cores of a host (the launcher's, taken as every host's) over its ranks
    int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    int perHost = worldSize;
    if (!placement.empty())
      perHost = std::max_element(placement.begin(), placement.end(), [](auto &a, auto &b) {
                  return a.count < b.count;
                })->count;
    workerArgs.push_back("--threads=" + std::to_string(std::max(1, cores / perHost)));
  }
  if (!std::isfinite(opts.collectiveTimeout) || opts.collectiveTimeout < 0) {
    char value[32];
    std::snprintf(value, sizeof value, "%g", opts.collectiveTimeout);
    return reportError(tool, fail("--collective-timeout " + llvm::Twine(value) +
                                  ": must be a finite number >= 0 (0: no limit)"));
  }
  // The ranks record their pids and ends in a folder of the launcher's unless
  // the caller names one (tests do, to find a rank's pid).
  std::string statusDir = opts.rankStatusDir;
  bool ownStatusDir = statusDir.empty();
  if (ownStatusDir) {
    llvm::SmallString<128> dir;
    if (!llvm::sys::fs::createUniqueDirectory("partita-ranks", dir))
      statusDir = dir.str().str();
  }
  if (!placement.empty()) {
    // Every host has what the plan reads, before any rank starts.
    auto checks = runHostChecks(mpirunArgs, placement, statusDirArgs(workerArgs, statusDir, ownStatusDir));
    if (!checks) {
      if (ownStatusDir && !statusDir.empty())
        llvm::sys::fs::remove_directories(statusDir);
      return reportError(tool, checks.takeError());
    }
    // A status folder in the launcher's temporary folder is not seen by
    // other hosts without a shared one: the launch then goes by mpirun's
    // exit code alone.
    if (ownStatusDir && llvm::any_of(*checks, [](const HostCheck &c) { return !c.statusDirSeen; })) {
      llvm::sys::fs::remove_directories(statusDir);
      statusDir.clear();
    }
    llvm::outs() << "partita launch: " << worldSize << " ranks on " << placement.size() << " hosts ("
                 << describePlacement(placement) << "); the plan's files checked on each\n";
    llvm::outs().flush();
    mpirunArgs.insert(mpirunArgs.end(), {"--host", mpirunHosts(placement), "--map-by", "slot"});
  }
  std::vector<std::string> args = mpirunArgs;
  if (!underMpi)
    args.insert(args.end(), {"-n", std::to_string(worldSize)});
  for (const std::string &a : statusDirArgs(workerArgs, statusDir, ownStatusDir))
    args.push_back(a);
  std::vector<llvm::StringRef> refs(args.begin(), args.end());
  std::string errMsg;
  int rc = llvm::sys::ExecuteAndWait(args[0], refs, llvm::None, {}, 0, 0, &errMsg);
  std::string failure;
  if (rc != 0)
    failure = describeRankFailure(statusDir, worldSize, /*allRanks=*/!underMpi, rc, errMsg);
  else if (!underMpi && !statusDir.empty())
    failure = unfinishedRanks(statusDir, worldSize);
  if (!failure.empty())
    rc = rc ? rc : 1;
  if (ownStatusDir && !statusDir.empty())
    llvm::sys::fs::remove_directories(statusDir);
  if (rc != 0)
    return reportError(tool, fail(failure));
  if (staged)
    if (auto err = commitOutput(*staged, worldSize))
      return reportError(tool, std::move(err));
  return 0;
}

static llvm::Error runSession(int rank, const Plan &plan, const std::string &writeDir);
static void reportPlacement(const Plan &plan, int rank);

/// Runs this process's rank; any error aborts every rank.
static llvm::Error runRank(int rank) {
  auto plan = readPlan(inDir(opts.planDir, "plan.json"));
  if (!plan)
    return plan.takeError();
  if (auto err = useDsConfigForLaunch(dsConfig, workerCmd, *plan, opts.train, /*report=*/false))
    return err;
  auto world = rt::MpiCommunicator::world(opts.collectiveTimeout);
  if (world->size() != plan->worldSize())
    return fail("started with " + llvm::Twine(world->size()) + " ranks, the plan needs " +
                llvm::Twine(plan->worldSize()));
  reportPlacement(*plan, rank);
  // Where this rank writes: the launcher's staging folder, or (under an
  // outside mpirun, one launcher per rank) one rank 0 stages for everyone.
  std::optional<StagedOutput> staged;
  std::string writeDir = opts.stagingDir;
  if (writeDir.empty()) {
    if (rank == 0) {
      auto s = StagedOutput::begin(opts.outDir, "launch", "--output-dir", launchInputs());
      if (!s)
        return s.takeError();
      staged.emplace(std::move(*s));
      writeDir = staged->path();
    }
    int64_t len = static_cast<int64_t>(writeDir.size());
    if (auto err = world->broadcast(&len, 1, DType::I64, 0))
      return err;
    std::vector<int64_t> chars(writeDir.begin(), writeDir.end()); // the collectives move numbers
    chars.resize(static_cast<size_t>(len));
    if (auto err = world->broadcast(chars.data(), chars.size(), DType::I64, 0))
      return err;
    writeDir.assign(chars.begin(), chars.end());
  }
  if (auto err = runSession(rank, *plan, writeDir))
    return err;
  if (auto err = world->barrier()) // every rank has written its part (under the watchdog)
    return err;
  // Without a staging of its own the launcher's: it joins the trace and commits.
  return staged ? commitOutput(*staged, static_cast<int>(world->size())) : llvm::Error::success();
}

/// Its replica's outputs (by output, by micro-batch) on each replica's
/// writer, gathered over dp onto replica 0's, which writes them.
static llvm::Error writeReplicaOutputs(rt::Session &session, size_t batches, std::vector<std::string> names,
                                       std::vector<std::vector<Tensor>> outs, const std::string &writeDir) {
  if (auto err = gatherReplicaOutputs(session.group(mesh_axis::kData), batches, outs))
    return err;
  if (session.coordinate(mesh_axis::kData) != 0)
    return llvm::Error::success();
  std::vector<std::string> written;
  std::vector<Tensor> values;
  for (size_t o = 0; o < names.size(); ++o) {
    if (outs[o].empty())
      continue;
    auto whole = concatMicroBatches(names[o], outs[o]);
    if (!whole)
      return whole.takeError();
    written.push_back(names[o]);
    values.push_back(std::move(*whole));
  }
  return rt::writeNpyFiles(writeDir, written, values);
}

/// Whether this rank writes its replica's outputs: coordinate 0 on every
/// axis but dp (and pp, where the last stage writes).
static bool replicaWriter(const rt::Session &session) {
  const Plan &plan = session.plan();
  bool writer = session.coordinate(mesh_axis::kPipeline) + 1 == plan.stages();
  for (const MeshAxis &a : plan.mesh.axes)
    writer &= a.name == mesh_axis::kPipeline || a.name == mesh_axis::kData || session.coordinate(a.name) == 0;
  return writer;
}

/// Inference on a pipeline stage: receive what the stage before sends, run
/// the forward, send on, for micro-batches `mine` (this rank's replica's);
/// the last stage's first rank keeps the outputs.
static llvm::Error runPipelined(rt::Session &session, rt::Program &forward, MicroBatches &micro,
                                const std::vector<size_t> &mine, const std::string &writeDir) {
  const Plan &plan = session.plan();
  int64_t stage = session.coordinate(mesh_axis::kPipeline);
  // MPI moves a large message only inside MPI calls: sends and receives progress between kernels.
  rt::Communicator *pp = session.group(mesh_axis::kPipeline);
  forward.setAfterEachKernel([pp] { pp->progress(); });
  const bool writer = replicaWriter(session);
  // Micro-batch j's outputs, by output (the writer's), for the last repeat.
  std::vector<std::vector<Tensor>> outs(plan.outputs.size());
  const int repeat = std::max(1, opts.repeat);
  for (int i = 0; i < repeat; ++i)
    for (size_t j : mine) {
      llvm::StringMap<rt::TensorView> feeds;
      std::vector<rt::DeviceTensor> onDevice; // the micro-batch's inputs
      for (const auto &in : forward.inputs()) {
        auto t = micro.batches[j].find(in.name);
        if (t == micro.batches[j].end())
          return fail("stage " + llvm::Twine(stage) + ": no value for input '" + in.name + "'");
        auto on = rt::DeviceTensor::upload(session.device(), t->second, rt::MemoryCategory::Activations,
                                           "input " + in.name);
        if (!on)
          return on.takeError();
        feeds[in.name] = on->view();
        onDevice.push_back(std::move(*on));
      }
      auto ran = forward.run(feeds);
      if (!ran)
        return ran.takeError();
      if (auto err = session.device().finishWork()) // a kernel's failure, before its outputs are used
        return err;
      if (!writer || i + 1 < repeat)
        continue;
      for (size_t o = 0; o < plan.outputs.size(); ++o)
        for (size_t k = 0; k < ran->size(); ++k)
          if (forward.outputNames()[k] == plan.outputs[o].name)
            outs[o].push_back(rt::download(session.device(), (*ran)[k]));
    }
  if (auto err = rt::PendingSends::process().drain())
    return err;
  if (!writer)
    return llvm::Error::success();
  std::vector<std::string> names;
  for (const TensorSpec &o : plan.outputs)
    names.push_back(o.name);
  return writeReplicaOutputs(session, micro.batches.size(), std::move(names), std::move(outs), writeDir);
}

/// This rank's work, writing into `writeDir`: its session (communicators
/// and programs), then a training run or one inference (repeated).
static llvm::Error runSession(int rank, const Plan &plan, const std::string &writeDir) {
  auto world = rt::MpiCommunicator::world(opts.collectiveTimeout);
  auto session = rt::Session::create(
      plan, opts.planDir, rank,
      [&](int color, int key, llvm::StringRef axis) {
        return llvm::Expected<std::unique_ptr<rt::Communicator>>(world->split(color, key, axis));
      },
      opts.device, opts.train.steps > 0 && opts.train.offloadOptimizer);
  if (!session)
    return session.takeError();
  if (opts.train.steps > 0)
    return rt::train(**session, *world, opts.train, writeDir);
  auto tensors = readInputFiles(opts.inputs);
  if (!tensors)
    return tensors.takeError();
  rt::Program &forward = *(*session)->program(kForwardProgram);
  std::vector<TensorSpec> specs;
  for (const auto &in : forward.inputs())
    specs.push_back({in.name, in.type});
  auto micro = splitMicroBatches(plan.stages() > 1 ? plan.inputs : specs, *tensors);
  if (!micro)
    return micro.takeError();
  for (auto &batch : micro->batches) // the inputs this rank's forward reads (a stage's received ones are partita.Recv's)
    if (auto filled = fillRoleInputs(specs, batch); !filled) // the launcher printed what it fills
      return filled.takeError();
  // Data parallelism: replica r runs micro-batches r, r + dp, ... (ReplicaInference.h).
  const MeshAxis *dp = plan.mesh.find(mesh_axis::kData);
  std::vector<size_t> mine = replicaBatches(micro->batches.size(), (*session)->coordinate(mesh_axis::kData), dp ? dp->size : 1);
  if (plan.stages() > 1)
    return runPipelined(**session, forward, *micro, mine, writeDir);
  RunOptions ro;
  ro.repeat = std::max(1, opts.repeat);
  std::vector<std::string> names;
  std::vector<std::vector<Tensor>> parts;
  for (size_t j : mine) {
    auto result = runLoaded(forward, (*session)->device(), micro->batches[j], ro);
    if (!result)
      return result.takeError();
    if (rank == 0 && ro.repeat > 1)
      llvm::outs() << "rank 0: " << result->statsLine << "\n";
    names = result->names;
    parts.resize(result->outputs.size());
    for (size_t o = 0; o < result->outputs.size(); ++o)
      parts[o].push_back(std::move(result->outputs[o]));
  }
  if (!replicaWriter(**session))
    return llvm::Error::success();
  return writeReplicaOutputs(**session, micro->batches.size(), std::move(names), std::move(parts), writeDir);
}

/// This worker's status file (see RankStatus); -1 without --rank-status-dir.
static int statusFd = -1;
static volatile sig_atomic_t ended = 0; // an end line was written

/// Async-signal-safe: one write(2) of a whole line.
static void recordStatus(const char *line) {
  if (statusFd >= 0 && ::write(statusFd, line, std::strlen(line)) < 0)
    return;
}

/// mpirun stops the other ranks with SIGTERM (after SIGCONT) when one fails:
/// those are recorded as terminated, so the rank that died first is the one
/// without an end line.
static void onTerminate(int sig) {
  if (!ended)
    recordStatus("end terminated\n");
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

static void startStatus(int rank) {
  if (opts.rankStatusDir.empty())
    return;
  std::string path = inDir(opts.rankStatusDir, "rank" + std::to_string(rank));
  statusFd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
  recordStatus(("pid " + std::to_string(::getpid()) + "\n").c_str());
  struct sigaction sa = {};
  sa.sa_handler = onTerminate;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, nullptr);
}

static int workerRank = 0;

/// One write(2) of the whole line: the lines of two failing ranks do not
/// interleave in mpirun's output.
static void reportRankError(llvm::StringRef message) {
  std::string line = "partita: rank " + std::to_string(workerRank) + ": error: " + message.str();
  if (line.back() != '\n')
    line += '\n';
  for (size_t done = 0; done < line.size();) {
    ssize_t n = ::write(2, line.data() + done, line.size() - done);
    if (n <= 0)
      break;
    done += static_cast<size_t>(n);
  }
  recordStatus("end error\n");
  ended = 1;
}

/// A worker run with --check-host: does this host have everything the ranks
/// will read (the plan and its programs, the model's weight files, --data,
/// --input) and see the folder the outputs are staged in? One line on stdout
/// for the launcher (runHostChecks); no MPI.
static int checkThisHost() {
  char name[256] = {};
  gethostname(name, sizeof name - 1);
  HostCheck c{name, "", true};
  llvm::Error err = [&]() -> llvm::Error {
    auto plan = readPlan(inDir(opts.planDir, "plan.json"));
    if (!plan)
      return plan.takeError();
    if (auto checked = checkArtifacts(opts.planDir, plan->worldSize()); !checked)
      return checked.takeError();
    if (auto read = readInputFiles(opts.inputs); !read)
      return read.takeError();
    if (!opts.train.data.empty())
      if (auto tokens = TokenFile::open(opts.train.data, opts.train.dataDtype); !tokens)
        return tokens.takeError();
    if (!dsConfig.empty())
      if (auto text = llvm::MemoryBuffer::getFile(dsConfig); !text)
        return fail("--ds-config " + dsConfig + ": " + text.getError().message());
    if (!opts.stagingDir.empty() && !llvm::sys::fs::is_directory(opts.stagingDir))
      return fail("the folder the outputs are staged in (" + opts.stagingDir + ", for --output-dir " + opts.outDir +
                  ") is not visible here: --output-dir must be on a filesystem every host shares");
    return llvm::Error::success();
  }();
  if (err)
    c.error = llvm::toString(std::move(err));
  c.statusDirSeen = opts.rankStatusDir.empty() || llvm::sys::fs::is_directory(opts.rankStatusDir);
  llvm::outs() << formatHostCheck(c);
  return 0;
}

/// Where the ranks run: rank 0 prints it when they span hosts, and warns of
/// a tensor-parallel group split over hosts (under a user's own mpirun or
/// Slurm placement; a --hostfile launch keeps each group on one host).
static void reportPlacement(const Plan &plan, int rank) {
  char own[MPI_MAX_PROCESSOR_NAME] = {};
  int len = 0;
  MPI_Get_processor_name(own, &len);
  int n = plan.worldSize();
  std::vector<char> all(static_cast<size_t>(n) * MPI_MAX_PROCESSOR_NAME);
  MPI_Allgather(own, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all.data(), MPI_MAX_PROCESSOR_NAME, MPI_CHAR, MPI_COMM_WORLD);
  if (rank != 0)
    return;
  std::vector<std::string> hostOf;
  for (int r = 0; r < n; ++r)
  {
    const char *name = all.data() + static_cast<size_t>(r) * MPI_MAX_PROCESSOR_NAME;
    hostOf.emplace_back(name, strnlen(name, MPI_MAX_PROCESSOR_NAME));
  }
  std::vector<HostRanks> runs = placementOf(hostOf);
  std::set<std::string> hosts(hostOf.begin(), hostOf.end());
  if (hosts.size() < 2)
    return;
  // Whole lines, each in one write: mpirun forwards stdout and stderr apart,
  // and a line split between writes interleaves with the warnings below.
  std::string line = "partita launch: rank placement: " + describePlacement(runs) + "\n";
  llvm::outs() << line;
  llvm::outs().flush();
  auto tp = plan.groups.find(mesh_axis::kTensor);
  int warned = 0;
  for (const auto &group : tp == plan.groups.end() ? std::vector<std::vector<int64_t>>{} : tp->second) {
    std::set<std::string> on;
    for (int64_t r : group)
      on.insert(hostOf[static_cast<size_t>(r)]);
    if (on.size() > 1 && warned++ < 4)
      llvm::errs() << "partita launch: warning: the tensor-parallel group of ranks " +
                          llvm::join(llvm::map_range(group, [](int64_t r) { return std::to_string(r); }), ", ") +
                          " spans hosts " + llvm::join(on, ", ") +
                          ": its all-reduces in every layer cross the network (place each tp group on one host, "
                          "as --hostfile does)\n";
  }
}

int workerMain() {
  if (opts.checkHost)
    return checkThisHost();
  rt::keepLargeAllocationsOnTheHeap(); // before MPI allocates: large collectives without page faults
  MPI_Init(nullptr, nullptr);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  workerRank = rank;
  startStatus(rank);
  // A blocking collective stuck past the deadline is ended from the watchdog's
  // thread, where MPI_Abort may not be called: exiting non-zero makes mpirun
  // stop the job.
  rt::MpiCommunicator::setTimeoutHandler([](const char *message) {
    reportRankError(message);
    _exit(1);
  });
  omp_set_num_threads(std::max(1, opts.threads));
  if (auto err = runRank(rank)) {
    reportRankError(llvm::toString(std::move(err)));
    MPI_Abort(MPI_COMM_WORLD, 1);
    return 1;
  }
  MPI_Finalize();
  recordStatus("end ok\n");
  return 0;
}

} // namespace partita
