//===- Program.h - an executable plan for one rank's ONNX program ---------===//
//
// Loading turns a typed Graph into: kernels per node (looked up by domain, op
// and device; anything unsupported fails here, never mid-run), weights and
// constants copied to the device once, and a memory plan that places every
// intermediate in one arena, reusing a buffer once its last reader ran. Graph
// outputs get their own buffers so results outlive the next run.
//
//===----------------------------------------------------------------------===//
#pragma once
#include "compiler/ir/Graph.h"
#include "runtime/core/MemoryLedger.h"
#include "runtime/executor/MemoryPlanner.h"
#include "runtime/executor/Scratch.h"
#include "runtime/kernels/Kernel.h"
#include "llvm/ADT/StringMap.h"
#include <chrono>
#include <functional>
#include <map>
#include <memory>

namespace partita::rt {

struct ProgramStats {
  size_t arenaBytes = 0;
  size_t lowerBoundBytes = 0;
  size_t weightBytes = 0;
  size_t outputBytes = 0;
  size_t numKernels = 0;
};

class Program {
public:
  ~Program();
  Program(const Program &) = delete;
  Program &operator=(const Program &) = delete;

  /// `env` supplies the communicators of collective ops (may be null for a
  /// program without them); it must outlive the program. Without
  /// `readWeights` the weights get their buffers but are not read (sizing a
  /// plan, as `partita inspect` does, reads no weight bytes).
  static llvm::Expected<std::unique_ptr<Program>> load(const Graph &g, Device &device,
                                                       const RuntimeEnv *env = nullptr, bool readWeights = true);

  struct InputSpec {
    std::string name;
    TensorType type;
  };
  const std::vector<InputSpec> &inputs() const { return inputSpecs_; }
  /// The type of graph input `name` (nullptr if the program has none).
  const TensorType *inputType(llvm::StringRef name) const {
    for (const InputSpec &in : inputSpecs_)
      if (in.name == name)
        return &in.type;
    return nullptr;
  }
  const std::vector<std::string> &outputNames() const { return outputNames_; }

  /// Runs once. `inputs` are device views by graph input name, checked against
  /// the program's dtypes and shapes; returns views of the output buffers
  /// (valid until the next run). On a device that queues its work the run
  /// returns once its kernels are launched, not done: work launched after it
  /// on the compute stream, a copy (which waits for the device) or
  /// completion() orders after them, and a kernel's failure shows at the
  /// device's next finishWork() (the training loop calls it once a step) or
  /// at a later run, whichever comes first.
  llvm::Expected<std::vector<TensorView>> run(const llvm::StringMap<TensorView> &inputs);
  /// Recorded on the compute stream at the end of the last run: complete
  /// once its results are written (null before a run, or on a device whose
  /// work is done when launched).
  const Event *completion() const { return done_.get(); }

  const ProgramStats &stats() const { return stats_; }
  /// The device the program runs on (its buffers are that device's memory).
  Device &device() const { return device_; }

  /// What the program's own output buffers count as in the MemoryLedger
  /// (activations by default: a forward's saved activations; a backward's
  /// are gradients). Its weights count as parameters, the arena as
  /// activations. An output gets its buffer at the first run, unless
  /// bindOutput gave it one before.
  void setOutputCategory(MemoryCategory c);
  /// Hands weight `name` (a static tensor) over to the caller, who frees it
  /// (with this program's device) and charges it from now on; the program
  /// keeps computing on it where it lies (the training state owns the
  /// parameters so: TrainState::adopt). An error when there is no such
  /// weight or it was handed over already.
  llvm::Expected<TensorView> releaseWeight(llvm::StringRef name);
  /// The bytes its kernels keep between runs in category `c` (staging:
  /// communication; reordered weights: workspace): what they charge to the
  /// ledger once they have run.
  size_t kernelBytes(MemoryCategory c) const;
  /// The scratch the kernels need of category `c` (Scratch.h): a rank
  /// holds the largest over the programs sharing its arena.
  size_t scratchBytes(MemoryCategory c) const { return scratchLayout_.bytes(c); }

  /// The device buffer of a weight or constant, by value name (nullptr if
  /// none): training writes updated parameters here between steps.
  const TensorView *staticTensor(llvm::StringRef valueName) const;
  /// Call after writing weights through staticTensor(): kernels drop what
  /// they derived from the old values (e.g. reordered GEMM weights).
  void weightsChanged() { ++weightsVersion_; }

  /// Makes graph output `name` write into `buffer` (device memory of its
  /// size, owned by the caller) from the next run on, instead of the
  /// program's own buffer: e.g. an optimizer step that updates parameters in
  /// place. The buffer may also be bound as an input of the same run only if
  /// every kernel between reads an element before it writes it (elementwise).
  llvm::Error bindOutput(llvm::StringRef name, void *buffer);
  /// Makes `others` use this program's arena, grown to the largest of
  /// theirs: programs that never run at the same time (a training step's
  /// forward, backward and optimizer programs) need one arena, not one each.
  /// An arena holds only a run's intermediates (outputs have buffers of
  /// their own), so nothing in it outlives a run. Same device only. They
  /// share the kernels' scratch regions the same way (Scratch.h).
  llvm::Error shareArena(llvm::ArrayRef<Program *> others);

  /// Called during run() as soon as graph output `index` is computed (e.g. to
  /// start a gradient all-reduce while the backward pass goes on).
  void setOutputReadyCallback(std::function<void(size_t index, const TensorView &)> cb) { onOutput_ = std::move(cb); }

  /// Called during run() after every kernel (e.g. to let communication
  /// started earlier make progress).
  void setAfterEachKernel(std::function<void()> cb) { afterKernel_ = std::move(cb); }

  /// Called for every collective (partita.AllReduce, AllGather, ReduceScatter,
  /// and a pipeline's Send and Recv) with when it started, when the program
  /// began to wait for it (an async one: its finish; a blocking one: its
  /// start) and when it was done.
  using CollectiveObserver =
      std::function<void(const Node &, std::chrono::steady_clock::time_point start,
                         std::chrono::steady_clock::time_point waitFrom, std::chrono::steady_clock::time_point end)>;
  void setCollectiveObserver(CollectiveObserver cb) { onCollective_ = std::move(cb); }

  /// Asynchronous collectives (async = 1: data parallelism's gradient
  /// buckets) start where the program places them and finish when an output
  /// is first read or the run ends, while the kernels in between run (on by
  /// default). Off: each finishes right after it starts (the same results,
  /// for measuring what the overlap gains).
  void setOverlapCollectives(bool on) { overlapCollectives_ = on; }

  /// Gradient accumulation over micro-batches, each reduction once (DDP's
  /// no_sync): while deferring, async reductions return this rank's partial
  /// sums; an addend set for a graph output (a buffer of its shape, owned by
  /// the caller; null clears it) is added to what its reduction reduces, so
  /// the last micro-batch reduces the sum of all of them. Reductions are
  /// linear: the result is the same as reducing every micro-batch. Addends
  /// are float32 sums; a half result (mixed precision) is widened, added to
  /// and rounded once before it is reduced.
  void setDeferReductions(bool on) { deferReductions_ = on; }
  llvm::Error setReductionAddend(llvm::StringRef output, const void *buffer);
  /// Whether graph output `output` is the result of an async all-reduce
  /// (one that defers; an async reduce-scatter, ZeRO-2's, reduces every run).
  bool reducedAsync(llvm::StringRef output) const;
  /// Whether graph output `output` comes from a kernel that, while deferring,
  /// sums its operands itself (Kernel::defersInside): complete only in the
  /// last micro-batch, and nothing for the caller to sum.
  bool deferredInside(llvm::StringRef output) const;
  /// What the kernels that sum deferred micro-batches themselves keep for
  /// it (Kernel::deferredSumBytes): held from a step with several micro-batches on.
  size_t deferredSumBytes() const;

  /// When on, run() accumulates wall time per op type (qualified name; a
  /// fused cluster is "fused elementwise"), or per node (by the node that
  /// ends the step) when `byNode`.
  void setProfiling(bool on, bool byNode = false) {
    profiling_ = on;
    profileByNode_ = byNode;
  }
  const std::map<std::string, std::pair<double, int>> &profile() const { return profile_; }
  void clearProfile() { profile_.clear(); }

private:
  explicit Program(Device &device) : device_(device) {}

  // Where a value's bytes live.
  enum class Home { Input, Static, Arena, Output };
  struct Slot {
    Home home = Home::Arena;
    size_t index = 0; // input index / static index / arena offset / output index
    TensorView view;  // dtype and shape; data bound at run
    int aliasOf = -1; // a view (Reshape, ...) of this slot's bytes: no copy
  };
  struct Step {
    const Node *node;
    std::unique_ptr<Kernel> kernel;
    std::vector<int> inputs;  // slot ids, -1 for omitted
    std::vector<int> outputs; // slot ids
    std::string label;        // profile key when not the node's op (a fused cluster)
  };

  void *addressOf(const Slot &s) const;
  TensorView deviceView(int slot) const; // what callers and callbacks get
  TensorView kernelView(int slot) const; // what kernels get (Device::kernelAddress)
  const Step *producerOf(llvm::StringRef output) const; // the step computing a graph output

  Device &device_;
  /// On a device that queues its work: recorded on its compute stream before
  /// each communicating kernel, which follows it (KernelContext::ready).
  std::unique_ptr<Event> ready_;
  std::unique_ptr<Event> done_; // completion()
  const RuntimeEnv *env_ = nullptr;
  std::vector<Slot> slots_;
  std::vector<Step> steps_;
  std::vector<void *> statics_;
  llvm::StringMap<TensorView> staticByName_;
  uint64_t weightsVersion_ = 0;
  std::vector<void *> outputBuffers_;     // null until the first run or a bindOutput
  std::vector<size_t> outputBufferBytes_;
  std::vector<bool> ownsOutputBuffer_;
  std::vector<MemoryCharge> outputCharges_;
  std::vector<void *> outputBlocks_; // output buffers laid back to back for one step (a bucket)
  std::vector<MemoryCharge> outputBlockCharges_;
  MemoryCharge staticsCharge_{MemoryCategory::Parameters, 0};
  std::vector<bool> releasedStatic_; // by statics_ index: handed over by releaseWeight (not freed here)
  MemoryCategory outputCategory_ = MemoryCategory::Activations;
  llvm::Error allocateRunBuffers(); // the output buffers and the arena: what a run needs that load does not make
  std::shared_ptr<void> arena_; // shared with the programs of shareArena; made at the first run
  ScratchLayout scratchLayout_;            // where each kernel's scratch lies (Scratch.h)
  std::shared_ptr<ScratchMemory> scratch_; // shared like the arena; grown at a run to this layout
  size_t arenaBytes_ = 0;
  std::vector<InputSpec> inputSpecs_;
  std::vector<void *> boundInputs_;
  std::vector<std::string> outputNames_;
  std::vector<int> outputSlots_;
  ProgramStats stats_;
  bool profiling_ = false, profileByNode_ = false, overlapCollectives_ = true, deferReductions_ = false;
  std::vector<const void *> addendOfOutput_;           // by graph output index
  std::vector<std::vector<const void *>> stepAddends_; // by step: per result, from addendOfOutput_
  /// A started asynchronous step and the views it was run on.
  struct InFlight {
    size_t step;
    std::vector<TensorView> inputs, outputs;
    std::chrono::steady_clock::time_point started; // for the collective observer
    void *scratch = nullptr;                        // its async scratch slot, held until finish
  };
  llvm::Error finish(InFlight &f);
  std::function<void(size_t, const TensorView &)> onOutput_;
  std::function<void()> afterKernel_;
  CollectiveObserver onCollective_;
  std::vector<std::vector<size_t>> outputsOfSlot_; // slot id -> graph output indices
  std::map<std::string, std::pair<double, int>> profile_; // op -> (ms, calls)
};

} // namespace partita::rt
