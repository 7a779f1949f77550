//===- MemoryLedger.h - a rank's memory by what it holds ------------------===//
//
// Every place the runtime allocates memory that outlives a kernel call
// charges it here, by category, as it allocates and frees: the executor (a
// program's weights, its outputs, the shared arena of intermediates), the
// training loop (AdamW's moments, the summed gradients) and the kernels
// (collectives' staging buffers, oneDNN's reordered weights). The ledger
// keeps each category's bytes now and the largest total it has seen, with
// what made it up: what `launch --memory` prints and `partita inspect`
// predicts before launch. One ledger per device (Device::ledger()): a GPU's
// memory apart from the host's; the CPU device's memory is the host's, so
// its ledger is the process's (process()).
//
// The copies a pipeline stage sends from (runtime/comm/PendingSends.h) live
// until the receiver has taken them, which timing decides: they are tallied
// apart, with their own high-water mark, so that the categories at the peak
// stay what the programs and the schedule make them. inspect predicts their
// bound (a step's sends).
//===----------------------------------------------------------------------===//
#pragma once
#include <array>
#include <cstddef>
#include <mutex>

namespace partita::rt {

enum class MemoryCategory {
  Parameters,      // weights and frozen buffers a program holds
  Gradients,       // the backward's gradient outputs and their sums over micro-batches
  OptimizerStates, // AdamW's moments
  Activations,     // the arena of intermediates and the forward's outputs (saved activations)
  Communication,   // collectives' staging buffers
  Workspace,       // kernels' own copies (oneDNN's reordered weights and packed operands)
};
inline constexpr size_t kMemoryCategories = 6;
const char *memoryCategoryName(MemoryCategory c);

class MemoryLedger {
public:
  using Bytes = std::array<size_t, kMemoryCategories>;
  /// The host memory's ledger (the process's).
  static MemoryLedger &process();
  void charge(MemoryCategory c, size_t bytes);
  void release(MemoryCategory c, size_t bytes);
  Bytes current() const;
  /// Each category's bytes when the total was at its largest.
  Bytes atPeak() const;
  size_t peak() const;
  /// Forgets the peak (the current bytes stay charged).
  void resetPeak();
  /// Pipeline send copies in flight (apart from the categories, see above).
  void chargeSendCopy(size_t bytes);
  void releaseSendCopy(size_t bytes);
  /// The most send-copy bytes in flight at once.
  size_t sendCopiesPeak() const;

private:
  mutable std::mutex mu_;
  Bytes now_{}, atPeak_{};
  size_t total_ = 0, peak_ = 0;
  size_t sendCopies_ = 0, sendCopiesPeak_ = 0;
};

/// Bytes charged to a category of a ledger for as long as this lives (a
/// buffer's owner keeps one beside it; resize() when the buffer grows or
/// shrinks). The ledger is the host's until setLedger() names the device
/// whose memory the buffer is.
class MemoryCharge {
public:
  MemoryCharge() = default;
  MemoryCharge(MemoryCategory c, size_t bytes) : category_(c) { resize(bytes); }
  MemoryCharge(MemoryLedger &ledger, MemoryCategory c, size_t bytes) : ledger_(&ledger), category_(c) {
    resize(bytes);
  }
  MemoryCharge(const MemoryCharge &) = delete;
  MemoryCharge &operator=(const MemoryCharge &) = delete;
  MemoryCharge(MemoryCharge &&o) noexcept : ledger_(o.ledger_), category_(o.category_), bytes_(o.bytes_) {
    o.bytes_ = 0;
  }
  MemoryCharge &operator=(MemoryCharge &&o) noexcept;
  ~MemoryCharge() { resize(0); }
  void setCategory(MemoryCategory c);
  /// Moves the bytes to `ledger` (the memory's device's).
  void setLedger(MemoryLedger &ledger);
  MemoryLedger &ledger() const { return ledger_ ? *ledger_ : MemoryLedger::process(); }
  void resize(size_t bytes);
  size_t bytes() const { return bytes_; }

private:
  MemoryLedger *ledger_ = nullptr; // null: the host's
  MemoryCategory category_ = MemoryCategory::Workspace;
  size_t bytes_ = 0;
};

} // namespace partita::rt
