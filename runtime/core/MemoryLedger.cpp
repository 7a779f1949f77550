//===- MemoryLedger.cpp ---------------------------------------------------===//
#include "runtime/core/MemoryLedger.h"

namespace partita::rt {

const char *memoryCategoryName(MemoryCategory c) {
  switch (c) {
  case MemoryCategory::Parameters: return "parameters";
  case MemoryCategory::Gradients: return "gradients";
  case MemoryCategory::OptimizerStates: return "optimizer states";
  case MemoryCategory::Activations: return "activations";
  case MemoryCategory::Communication: return "communication";
  case MemoryCategory::Workspace: return "workspace";
  }
  return "?";
}

MemoryLedger &MemoryLedger::process() {
  // Never destroyed: a charge released during static destruction (a
  // program held by a static, a kernel's staging) must still find it.
  static MemoryLedger *ledger = new MemoryLedger;
  return *ledger;
}

void MemoryLedger::charge(MemoryCategory c, size_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  now_[static_cast<size_t>(c)] += bytes;
  total_ += bytes;
  if (total_ > peak_) {
    peak_ = total_;
    atPeak_ = now_;
  }
}

void MemoryLedger::release(MemoryCategory c, size_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  size_t &n = now_[static_cast<size_t>(c)];
  bytes = bytes < n ? bytes : n;
  n -= bytes;
  total_ -= bytes;
}

MemoryLedger::Bytes MemoryLedger::current() const {
  std::lock_guard<std::mutex> lock(mu_);
  return now_;
}

MemoryLedger::Bytes MemoryLedger::atPeak() const {
  std::lock_guard<std::mutex> lock(mu_);
  return atPeak_;
}

size_t MemoryLedger::peak() const {
  std::lock_guard<std::mutex> lock(mu_);
  return peak_;
}

void MemoryLedger::resetPeak() {
  std::lock_guard<std::mutex> lock(mu_);
  peak_ = total_;
  atPeak_ = now_;
}

void MemoryLedger::chargeSendCopy(size_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  sendCopies_ += bytes;
  sendCopiesPeak_ = sendCopies_ > sendCopiesPeak_ ? sendCopies_ : sendCopiesPeak_;
}

void MemoryLedger::releaseSendCopy(size_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  sendCopies_ -= bytes < sendCopies_ ? bytes : sendCopies_;
}

size_t MemoryLedger::sendCopiesPeak() const {
  std::lock_guard<std::mutex> lock(mu_);
  return sendCopiesPeak_;
}

MemoryCharge &MemoryCharge::operator=(MemoryCharge &&o) noexcept {
  if (this != &o) {
    resize(0);
    ledger_ = o.ledger_;
    category_ = o.category_;
    bytes_ = o.bytes_;
    o.bytes_ = 0;
  }
  return *this;
}

void MemoryCharge::setCategory(MemoryCategory c) {
  size_t bytes = bytes_;
  resize(0);
  category_ = c;
  resize(bytes);
}

void MemoryCharge::setLedger(MemoryLedger &to) {
  size_t bytes = bytes_;
  resize(0);
  ledger_ = &to;
  resize(bytes);
}

void MemoryCharge::resize(size_t bytes) {
  if (bytes > bytes_)
    ledger().charge(category_, bytes - bytes_);
  else if (bytes < bytes_)
    ledger().release(category_, bytes_ - bytes);
  bytes_ = bytes;
}

} // namespace partita::rt
