//===- MemoryReport.h - a rank's memory as one line -----------------------===//
//
// `launch --memory` (measured: the MemoryLedger after training) and
// `partita inspect` (predicted from the plan) print the same line, so the two
// can be set side by side:
//   memory of rank 0 (measured, MB): parameters 0.033900, gradients 0.031040, ... ; peak 0.4107 (410720 bytes)
// and, on a pipeline, the copies its sends go out from (apart from the peak:
// see MemoryLedger.h), the most in flight at once (measured) or their bound,
// a step's sends (predicted):
//   pipeline send copies of rank 0 (measured, MB): at most 0.008192 in flight
// Under optimizer offload, on a device apart from the host, launch also
// prints what the step keeps in host memory, by the same categories:
//   host of rank 0 (measured, MB): parameters ..., optimizer states ...
//===----------------------------------------------------------------------===//
#pragma once
#include "runtime/core/MemoryLedger.h"
#include "llvm/Support/raw_ostream.h"

namespace partita::rt {

/// `bytes` by category, and the total they make as the peak; `what` and
/// the rank begin the line.
void printMemoryLine(llvm::raw_ostream &os, int rank, llvm::StringRef how, const MemoryLedger::Bytes &bytes,
                     size_t peak, llvm::StringRef what = "memory of rank");
/// The pipeline send copies' line.
void printSendCopiesLine(llvm::raw_ostream &os, int rank, llvm::StringRef how, size_t bytes);

} // namespace partita::rt
