//===- Scratch.h - kernels' scratch, shared by a rank's programs ----------===//
//
// A kernel's scratch (Kernel::scratch: a collective's packing buffer, a
// per-run blocked copy of a GEMM operand) is memory it needs only while it
// works. Kept per kernel it would cost the sum over kernels: a copy of every
// gradient for ZeRO's reduce-scatters, of every weight for the GEMMs. Here a
// program lays its kernels' needs out per memory category as
//   [ blocking | slot 0 | slot 1 ]
// `blocking` is the largest need of a kernel that is done when run()
// returns: they run one at a time. Each slot is the largest need of an async
// kernel (a bucket's reduce-scatter in flight while the backward goes on),
// which holds it until its finish(); when both slots are held the executor
// finishes the oldest before starting another (DeepSpeed's double-buffered
// reduce bucket). The regions themselves (ScratchMemory) are shared by the
// programs of one training loop, which run one after another: a rank holds
// the largest layout of its programs, which is what `partita inspect`
// predicts.
//===----------------------------------------------------------------------===//
#pragma once
#include "runtime/core/Device.h"
#include "runtime/core/MemoryLedger.h"
#include "runtime/kernels/Kernel.h"
#include "llvm/Support/Error.h"
#include <array>
#include <memory>

namespace partita::rt {

/// One program's scratch layout, by category.
class ScratchLayout {
public:
  static constexpr int kAsyncSlots = 2;
  /// A kernel's need (async: it holds it until finish()).
  void add(const ScratchNeed &need, bool async);
  /// The region category `c` needs (0 when no kernel needs scratch of it).
  size_t bytes(MemoryCategory c) const;
  /// Where a blocking kernel's scratch starts in its category's region, and async slot `k`'s.
  size_t blockingOffset() const { return 0; }
  size_t slotOffset(MemoryCategory c, int k) const;

private:
  std::array<size_t, kMemoryCategories> blocking_{}, slot_{};
};

/// The scratch regions themselves, one per category, grown to the largest
/// layout asked of them (between runs: no kernel holds scratch then) and
/// charged to the MemoryLedger under their category.
class ScratchMemory {
public:
  explicit ScratchMemory(Device &device) : device_(device) {
    for (size_t c = 0; c < kMemoryCategories; ++c) // each region is memory of `device`, of its category
      charges_[c] = MemoryCharge(device.ledger(), static_cast<MemoryCategory>(c), 0);
  }
  ~ScratchMemory();
  ScratchMemory(const ScratchMemory &) = delete;
  ScratchMemory &operator=(const ScratchMemory &) = delete;
  llvm::Error reserve(const ScratchLayout &layout);
  void *region(MemoryCategory c) const { return base_[static_cast<size_t>(c)]; }
  Device &device() const { return device_; }

private:
  Device &device_;
  std::array<void *, kMemoryCategories> base_{};
  std::array<size_t, kMemoryCategories> bytes_{};
  std::array<MemoryCharge, kMemoryCategories> charges_;
};

} // namespace partita::rt
