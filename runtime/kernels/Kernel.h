//===- Kernel.h - the interface every device kernel implements ------------===//
//
// A kernel is built once per node when a program is loaded (so shape-dependent
// set-up, such as a oneDNN primitive, happens at load, never mid-run) and run
// once per execution on views of its inputs and outputs.
//
//===----------------------------------------------------------------------===//
#pragma once
#include "runtime/core/MemoryLedger.h"
#include "compiler/ir/Graph.h"
#include "runtime/core/Device.h"
#include "runtime/core/TensorView.h"
#include "llvm/Support/Error.h"
#include <functional>
#include <memory>

namespace partita::rt {

struct RuntimeEnv;

struct KernelContext {
  Device &device;
  const std::vector<TensorView> &inputs;
  std::vector<TensorView> &outputs;
  const RuntimeEnv *env = nullptr; // communicators, for collective kernels
  /// Changes whenever the program's weights were rewritten (training): a
  /// kernel that caches something derived from a weight must refresh it.
  uint64_t weightsVersion = 0;
  /// Gradient accumulation (DDP's no_sync): an async reduction `defers`
  /// (its results are this rank's operands, nothing is communicated), or adds
  /// `addends[i]` (same shape as result i; null: none) to operand i before
  /// reducing: the partial sums of the micro-batches deferred before.
  bool deferReductions = false;
  const std::vector<const void *> *addends = nullptr;
  /// The kernel's scratch (its scratch().bytes of device memory, aligned),
  /// valid while run() works and, for an async kernel, until its finish().
  void *scratch = nullptr;
  /// For a kernel that communicates(), on a device that queues its work: an
  /// event recorded on the compute stream after every kernel launched before
  /// it. The kernel touches its buffers only after follow() (Device.h's
  /// stream rules). Null where the device's work is done when launched.
  const Event *ready = nullptr;
  /// Orders what the kernel does next after `ready` through `comm` (the MPI
  /// backend waits on the host, NCCL's stream waits on the device), then
  /// returns the error of a kernel launched before, if one failed: its
  /// results must not be communicated.
  llvm::Error follow(class Communicator &comm) const;
};

/// Memory a kernel needs only while it works (a collective's packing buffer,
/// a per-run blocked copy of an operand), as opposed to bytes it keeps.
/// The executor hands it out from scratch regions that the programs of one
/// training loop share (Program::shareArena): a rank pays for the largest
/// need, not the sum over its kernels.
struct ScratchNeed {
  size_t bytes = 0;
  MemoryCategory category = MemoryCategory::Workspace;
};

class Kernel {
public:
  virtual ~Kernel() = default;
  virtual llvm::Error run(KernelContext &ctx) = 0;

  /// An asynchronous kernel (a collective the program marks async) only
  /// starts its work in run(), which must be done with its inputs when it
  /// returns; finish() completes it, writing the outputs (the executor calls
  /// it before the first reader of an output runs, at the latest when the
  /// program ends), and progress() lets it advance in between.
  virtual bool isAsync() const { return false; }
  /// Whether run() (or finish()) calls a communicator. Such a kernel runs
  /// on the host thread and follows KernelContext::ready before it touches
  /// a buffer (the communication follows the compute stream's event, as
  /// NCCL's stream waits on the compute stream's); every other kernel is
  /// launched on the device's stream (Device::launch).
  virtual bool communicates() const { return false; }
  virtual llvm::Error finish(KernelContext &) { return llvm::Error::success(); }
  virtual void progress() {}
  /// Bytes the kernel keeps between runs (a collective's staging buffers,
  /// oneDNN's reordered weights), charged to the MemoryLedger as it makes
  /// them; known at creation, so `partita inspect` predicts them.
  virtual size_t persistentBytes() const { return 0; }
  virtual MemoryCategory persistentCategory() const { return MemoryCategory::Workspace; }
  /// Scratch (see ScratchNeed), known at creation; KernelContext::scratch
  /// points to it during run() (and until finish() for an async kernel,
  /// which holds it while its communication is in flight).
  virtual ScratchNeed scratch() const { return {}; }
  /// Whether the kernel's results should lie back to back in one block (a
  /// collective's bucket then reduces in place, with no staging copy); the
  /// executor lays out a step's own output buffers so when it can.
  virtual bool wantsContiguousOutputs() const { return false; }
  /// Whether, while the program defers its reductions (micro-batches before
  /// the last), the kernel sums what it would reduce itself and reduces the
  /// sum at the last (ZeRO-1's reduce-scatter): its results are complete
  /// only then, and the caller keeps no sums of its own.
  virtual bool defersInside() const { return false; }
  /// The bytes such a kernel keeps for its sums (Gradients), made at the
  /// first run that defers: none when a step has one micro-batch.
  virtual size_t deferredSumBytes() const { return 0; }
};

/// Builds the kernel for `node` (types are static in the IR), or fails naming
/// why this device cannot run it (e.g. an unsupported dtype).
using KernelFactory = std::function<llvm::Expected<std::unique_ptr<Kernel>>(const Node &node)>;

/// Builds one kernel computing `consumer(producer(...))` where the consumer is
/// an elementwise epilogue (e.g. Linear followed by GELU): the intermediate is
/// never written to memory.
using EpilogueFactory =
    std::function<llvm::Expected<std::unique_ptr<Kernel>>(const Node &producer, const Node &consumer)>;

/// A Cast widening bf16 to f32 (mixed precision's half activations and
/// weights): a matmul on a device with a bf16 GEMM reads its input instead
/// (the Cast operand fusion, FusionPlan.h).
inline bool isBf16Widening(const Node *p) {
  return p && p->is("Cast") && p->numInputs() == 1 && p->input(0) && p->input(0)->type().dtype == DType::BF16 &&
         p->output()->type().dtype == DType::F32;
}

/// Builds one kernel for `consumer` that reads operand k through
/// `producers[k]` (null: the operand itself) instead of a materialized result,
/// e.g. a matmul reading a Transpose's input through strides; `epilogue` (may
/// be null) is fused as above.
using OperandFusionFactory = std::function<llvm::Expected<std::unique_ptr<Kernel>>(
    const Node &consumer, const std::vector<const Node *> &producers, const Node *epilogue)>;

/// Elementwise nodes of one output shape run as one kernel (formed by the
/// executor, see ElementwiseClusters.h).
struct ElementwiseCluster {
  std::vector<const Node *> nodes;    // program order; the last one is where it runs
  std::vector<const Value *> inputs;  // read from outside (graph inputs, weights, other steps)
  std::vector<const Value *> outputs; // written out: read outside the cluster, or graph outputs
};

/// A device's cluster fusion: which nodes it can fuse, and the kernel
/// running a cluster of them (inputs and outputs bound in the cluster's order).
struct ClusterFusion {
  std::function<bool(const Node &)> fusible;
  std::function<llvm::Expected<std::unique_ptr<Kernel>>(const ElementwiseCluster &)> make;
};

/// Error naming the node, for factories and kernels.
llvm::Error kernelError(const Node &node, const llvm::Twine &msg);

} // namespace partita::rt
