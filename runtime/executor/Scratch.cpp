//===- Scratch.cpp - kernels' scratch, shared by a rank's programs --------===//
#include "runtime/executor/Scratch.h"
#include <algorithm>

namespace partita::rt {

namespace {

size_t aligned(size_t bytes) { return (bytes + Device::alignment() - 1) / Device::alignment() * Device::alignment(); }

} // namespace

void ScratchLayout::add(const ScratchNeed &need, bool async) {
  size_t &at = (async ? slot_ : blocking_)[static_cast<size_t>(need.category)];
  at = std::max(at, aligned(need.bytes));
}

size_t ScratchLayout::bytes(MemoryCategory c) const {
  size_t i = static_cast<size_t>(c);
  return blocking_[i] + kAsyncSlots * slot_[i];
}

size_t ScratchLayout::slotOffset(MemoryCategory c, int k) const {
  size_t i = static_cast<size_t>(c);
  return blocking_[i] + static_cast<size_t>(k) * slot_[i];
}

ScratchMemory::~ScratchMemory() {
  for (void *p : base_)
    if (p)
      device_.deallocate(p);
}

llvm::Error ScratchMemory::reserve(const ScratchLayout &layout) {
  for (size_t c = 0; c < kMemoryCategories; ++c) {
    size_t want = layout.bytes(static_cast<MemoryCategory>(c));
    if (want <= bytes_[c])
      continue;
    if (base_[c])
      device_.deallocate(base_[c]);
    base_[c] = device_.allocate(want);
    if (!base_[c]) {
      bytes_[c] = 0;
      charges_[c].resize(0);
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "out of device memory allocating " + std::to_string(want) + " bytes of " +
                                         memoryCategoryName(static_cast<MemoryCategory>(c)) + " scratch");
    }
    bytes_[c] = want;
    charges_[c].resize(want);
  }
  return llvm::Error::success();
}

} // namespace partita::rt
