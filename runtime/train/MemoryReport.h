//===- MemoryReport.h - a rank's memory as one line -----------------------===//
//
// `launch --memory` (measured: the MemoryLedger after training) and
// `partita inspect` (predicted from the plan) print the same line, so the two
// can be set side by side:
//   memory of rank 0 (measured, MB): parameters 0.033900, gradients 0.031040, ... ; peak 0.4107 (410720 bytes)
//===----------------------------------------------------------------------===//
#pragma once
#include "runtime/core/MemoryLedger.h"
#include "llvm/Support/raw_ostream.h"

namespace partita::rt {

/// `bytes` by category, and the total they make as the peak.
void printMemoryLine(llvm::raw_ostream &os, int rank, llvm::StringRef how, const MemoryLedger::Bytes &bytes,
                     size_t peak);

} // namespace partita::rt
