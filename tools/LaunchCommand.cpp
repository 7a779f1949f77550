//===- LaunchCommand.cpp - partita launch and the per-rank worker ---------===//
//
// `partita launch -n N out/` checks the artifacts (plan world size, rank
// folders, every program parses) before any rank starts, then runs N workers
// through mpirun (with the flags it needs as root and to oversubscribe the
// cores), or in place when it already runs under mpirun/Slurm. A worker that
// fails prints its rank and error and aborts the job, so the launch exits
// non-zero instead of hanging. Rank 0 writes the outputs.
//===----------------------------------------------------------------------===//
#include "compiler/onnx/OnnxImport.h"
#include "runtime/comm/Communicator.h"
#include "tools/Commands.h"
#include "tools/Plan.h"
#include "tools/ToolCommon.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"
#include "onnx/onnx_pb.h"
#include <cstdlib>
#include <mpi.h>
#include <omp.h>
#include <thread>

namespace cl = llvm::cl;

namespace partita {

static cl::SubCommand launchCmd("launch", "Run the ranks of a compiled model");
static cl::opt<int> worldSize("n", cl::desc("Number of ranks"), cl::sub(launchCmd), cl::Required);
static cl::opt<std::string> launchDir(cl::Positional, cl::desc("<out/>"), cl::sub(launchCmd), cl::Required);
static cl::list<std::string> launchInputs("input", cl::desc("An input: NAME=FILE.npy"), cl::sub(launchCmd));
static cl::opt<std::string> launchOutDir("output-dir", cl::desc("Folder for rank 0's outputs"),
                                         cl::sub(launchCmd), cl::Required);
static cl::opt<int> launchThreads("threads", cl::desc("Threads per rank (default: cores / ranks, at least 1)"),
                                  cl::init(0), cl::sub(launchCmd));
static cl::opt<int> launchRepeat("repeat", cl::desc("Run this many times; rank 0 prints the median time"),
                                 cl::init(1), cl::sub(launchCmd));

static cl::SubCommand workerCmd("worker", "(internal) one rank of a launch");
static cl::opt<std::string> workerDir(cl::Positional, cl::desc("<out/>"), cl::sub(workerCmd), cl::Required);
static cl::list<std::string> workerInputs("input", cl::desc("An input: NAME=FILE.npy"), cl::sub(workerCmd));
static cl::opt<std::string> workerOutDir("output-dir", cl::desc("Folder for rank 0's outputs"), cl::sub(workerCmd),
                                         cl::Required);
static cl::opt<int> workerThreads("threads", cl::desc("Threads"), cl::init(1), cl::sub(workerCmd));
static cl::opt<int> workerRepeat("repeat", cl::desc("Runs"), cl::init(1), cl::sub(workerCmd));

bool launchSelected() { return static_cast<bool>(launchCmd); }
bool workerSelected() { return static_cast<bool>(workerCmd); }

static llvm::Error fail(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

static std::string inDir(llvm::StringRef dir, llvm::StringRef rel) {
  llvm::SmallString<256> p(dir);
  llvm::sys::path::append(p, rel);
  return p.str().str();
}

/// Everything that can be checked before a rank starts.
static llvm::Expected<Plan> checkArtifacts(llvm::StringRef dir, int n) {
  auto plan = readPlan(inDir(dir, "plan.json"));
  if (!plan)
    return plan.takeError();
  if (plan->worldSize() != n)
    return fail(dir + ": the plan is for " + llvm::Twine(plan->worldSize()) + " ranks (" + plan->mesh.str() +
                "), but -n " + llvm::Twine(n) + " was given");
  for (const RankPlan &r : plan->ranks) {
    std::string path = inDir(dir, r.forward);
    auto buf = llvm::MemoryBuffer::getFile(path);
    if (!buf)
      return fail("rank " + llvm::Twine(r.rank) + ": missing program " + path);
    onnx::ModelProto m;
    if (!m.ParseFromArray((*buf)->getBufferStart(), static_cast<int>((*buf)->getBufferSize())))
      return fail("rank " + llvm::Twine(r.rank) + ": corrupt program " + path + " (not a valid ONNX model)");
  }
  return plan;
}

int launchMain(const char *argv0) {
  const char *tool = "partita launch";
  if (worldSize < 1)
    return reportError(tool, fail("-n must be >= 1"));
  auto plan = checkArtifacts(launchDir, worldSize);
  if (!plan)
    return reportError(tool, plan.takeError());
  if (auto inputs = readInputFiles(launchInputs); !inputs)
    return reportError(tool, inputs.takeError());
  int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  int threads = launchThreads > 0 ? launchThreads : std::max(1, cores / worldSize);
  std::string self = llvm::sys::fs::getMainExecutable(argv0, reinterpret_cast<void *>(&launchMain));
  std::vector<std::string> args;
  bool underMpi = std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMI_SIZE") || std::getenv("SLURM_PROCID");
  if (!underMpi) {
    auto mpirun = llvm::sys::findProgramByName("mpirun");
    if (!mpirun)
      return reportError(tool, fail("mpirun not found on PATH (install openmpi-bin)"));
    args = {*mpirun, "--allow-run-as-root", "--oversubscribe", "--bind-to", "none", "-n",
            std::to_string(worldSize.getValue()), "--mca", "btl_vader_single_copy_mechanism", "none"};
  }
  args.insert(args.end(), {self, "worker", launchDir.getValue(), "--output-dir", launchOutDir.getValue(),
                           "--threads", std::to_string(threads), "--repeat",
                           std::to_string(std::max(1, launchRepeat.getValue()))});
  for (const auto &in : launchInputs)
    args.push_back("--input=" + in);
  std::vector<llvm::StringRef> refs(args.begin(), args.end());
  std::string errMsg;
  int rc = llvm::sys::ExecuteAndWait(args[0], refs, llvm::None, {}, 0, 0, &errMsg);
  if (rc != 0)
    return reportError(tool, fail("the ranks failed (exit code " + llvm::Twine(rc) + ")" +
                                  (errMsg.empty() ? "" : ": " + errMsg) + "; see the rank errors above"));
  return 0;
}

/// Runs this process's rank; any error aborts every rank.
static llvm::Error runRank(int rank) {
  auto plan = readPlan(inDir(workerDir, "plan.json"));
  if (!plan)
    return plan.takeError();
  auto world = rt::MpiCommunicator::world();
  if (world->size() != plan->worldSize())
    return fail("started with " + llvm::Twine(world->size()) + " ranks, the plan needs " +
                llvm::Twine(plan->worldSize()));
  const RankPlan &me = plan->ranks[rank];
  rt::RuntimeEnv env;
  std::vector<std::unique_ptr<rt::MpiCommunicator>> groups;
  for (const auto &[axis, members] : plan->groups) {
    int color = 0;
    for (size_t i = 0; i < members.size(); ++i)
      if (std::find(members[i].begin(), members[i].end(), rank) != members[i].end())
        color = static_cast<int>(i);
    auto group = world->split(color, rank);
    if (!group)
      return group.takeError();
    env.groups[axis] = group->get();
    groups.push_back(std::move(*group));
  }
  auto inputs = readInputFiles(workerInputs);
  if (!inputs)
    return inputs.takeError();
  auto g = importOnnx(inDir(workerDir, me.forward), ImportOptions());
  if (!g)
    return g.takeError();
  RunOptions ro;
  ro.env = &env;
  ro.repeat = std::max(1, workerRepeat.getValue());
  auto result = runOnCpu(**g, *inputs, ro);
  if (!result)
    return result.takeError();
  if (rank == 0 && ro.repeat > 1)
    llvm::outs() << "rank 0: " << result->statsLine << "\n";
  if (rank == 0)
    return writeOutputFiles(workerOutDir, result->names, result->outputs);
  return llvm::Error::success();
}

int workerMain() {
  MPI_Init(nullptr, nullptr);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  omp_set_num_threads(std::max(1, workerThreads.getValue()));
  if (auto err = runRank(rank)) {
    llvm::errs() << "partita: rank " << rank << ": error: " << llvm::toString(std::move(err)) << "\n";
    llvm::errs().flush();
    MPI_Abort(MPI_COMM_WORLD, 1);
    return 1;
  }
  MPI_Finalize();
  return 0;
}

} // namespace partita
