//===- PendingSends.h - sends that do not wait for their receiver ---------===//
//
// A pipeline stage sends its activations and gradients and goes on computing
// while the next stage receives them (partita.Send, runtime/cpu/P2PKernels.cpp;
// a shared weight's gradient, StageLinks). Each send goes out from a copy of
// its bytes in the device's memory (charged to its ledger as a send copy), so
// its source may be overwritten at once, and no schedule can deadlock on two
// stages sending to each other; the communicator reads the copy where the
// device's kernels would (Device::kernelAddress). The copies live here, one
// process-wide list in the order the sends started, until the communicator is
// done with them: reap() frees those done, drain() waits for all (at the end
// of a step, before the communicators go).
//===----------------------------------------------------------------------===//
#pragma once
#include "runtime/comm/Communicator.h"
#include "runtime/core/Device.h"
#include <deque>
#include <string>
#include <vector>

namespace partita::rt {

/// Who a pipeline message goes to or comes from: "stage 3 (pp rank 1)" (a
/// stage is a model chunk under interleaving, held by rank stage mod pp).
inline std::string pipelinePeer(int64_t stage, llvm::StringRef axis, int rank) {
  return "stage " + std::to_string(stage) + " (" + axis.str() + " rank " + std::to_string(rank) + ")";
}

class PendingSends {
public:
  /// The process's list. Never destroyed: a send still going when an error
  /// stops the rank keeps its bytes (MPI may still read them) until it aborts.
  static PendingSends &process();

  /// Device memory for a send's copy of `bytes` bytes (charged as a send
  /// copy): the caller copies into it, then start()s the send, or hands it
  /// back with release().
  llvm::Expected<void *> allocate(Device &device, size_t bytes);
  void release(Device &device, void *copy, size_t bytes);
  /// Starts sending `bytes` bytes of `device` memory at `copy` (allocate()'s,
  /// holding `count` elements of `dtype`) to rank `peer` of `comm` with
  /// message tag `tag`; the copy is freed once the send is done (also when
  /// it cannot start).
  llvm::Error start(Communicator &comm, Device &device, void *copy, size_t bytes, size_t count, DType dtype,
                    int peer, int tag);
  /// Frees the copies of the sends that are done.
  llvm::Error reap();
  /// Waits for every send started (their receivers took them).
  llvm::Error drain();
  /// Forgets the sends from `device`'s memory, freeing the copies of those
  /// done: the device and its communicators are going (a rank that failed
  /// on its way to abort; after a step, drain() left none).
  void abandon(Device &device);

private:
  struct Pending {
    Communicator *comm;
    int handle;
    Device *device;
    void *copy;
    size_t bytes;
  };
  std::deque<Pending> pending_;
};

} // namespace partita::rt
