//===- Session.h - one rank of a compiled plan, ready to run --------------===//
//
// Built once per rank from plan.json: the rank's communicators, one per mesh
// axis (the group of ranks that differ from it only along that axis, split
// from the world), and its programs loaded by name ("forward"; "backward",
// "grad_norm" and "step" in a training plan), each checked against the hash the plan records before it is
// read. The session owns the device (made by name from the DeviceRegistry),
// the communicators and the programs; the programs' collectives find their
// communicators in env().
//===----------------------------------------------------------------------===//
#pragma once
#include "compiler/plan/Plan.h"
#include "runtime/comm/Communicator.h"
#include "runtime/core/Device.h"
#include "runtime/executor/Program.h"
#include "llvm/ADT/STLFunctionalExtras.h"

namespace partita::rt {

/// Makes the communicator of the ranks that pass the same `color`, ordered
/// by `key` (MPI_Comm_split's contract); `axis` names it in diagnostics.
using GroupSplitter =
    llvm::function_ref<llvm::Expected<std::unique_ptr<Communicator>>(int color, int key, llvm::StringRef axis)>;

/// Marks the Weight nodes of a training plan's program that the step
/// updates (plan.params) with attribute `updated_every_step` = 1: kernels
/// then keep no copy of them in another layout (runtime/cpu/GemmKernels.cpp).
/// Session and inspect call it on every program they load.
void markUpdatedWeights(Graph &program, const Plan &plan);

class Session {
public:
  /// Every rank of the job calls it (the splits are collective). `plan`
  /// must outlive the session; `planDir` is the folder of plan.json;
  /// `device` names the device the programs run on (DeviceRegistry.h).
  /// `offloadOptimizer` (DeepSpeed's offload_optimizer to the CPU): the step
  /// programs run on a host CPU device of their own instead, their masters
  /// and the moments in host memory (StageRun.h says how the rest moves).
  static llvm::Expected<std::unique_ptr<Session>> create(const Plan &plan, llvm::StringRef planDir, int rank,
                                                         GroupSplitter split, llvm::StringRef device = "cpu",
                                                         bool offloadOptimizer = false);
  ~Session();

  int rank() const { return rank_; }
  const Plan &plan() const { return *plan_; }
  const RankPlan &rankPlan() const { return plan_->ranks[rank_]; }
  /// The size of mesh axis `axis` (1 without it) and this rank's coordinate on it.
  int64_t axisSize(llvm::StringRef axis) const;
  int64_t coordinate(llvm::StringRef axis) const;
  /// The communicator of this rank's group along `axis` (nullptr: none).
  Communicator *group(llvm::StringRef axis) const { return env_.group(axis); }
  const RuntimeEnv &env() const { return env_; }
  Device &device() { return *device_; }
  /// Where the step programs run: the host's CPU device under optimizer
  /// offload, else device().
  Device &optimizerDevice() { return host_ ? *host_ : *device_; }
  bool offloadsOptimizer() const { return host_ != nullptr; }
  /// The program `name` of this rank (nullptr: the plan gives it none).
  Program *program(llvm::StringRef name) const;

private:
  Session(const Plan &plan, int rank) : plan_(&plan), rank_(rank) {}
  llvm::Error loadProgram(llvm::StringRef name, llvm::StringRef path, llvm::StringRef planDir);

  const Plan *plan_;
  int rank_;
  std::unique_ptr<Device> device_;
  std::unique_ptr<Device> host_; // the step programs' under optimizer offload
  std::vector<std::unique_ptr<Communicator>> groups_;
  RuntimeEnv env_;
  struct Loaded {
    std::unique_ptr<Graph> graph; // the program refers to its nodes
    std::unique_ptr<Program> program;
  };
  llvm::StringMap<Loaded> programs_; // declared last: destroyed before what they use
};

} // namespace partita::rt
