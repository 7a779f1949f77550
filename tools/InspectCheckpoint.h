//===- InspectCheckpoint.h - `partita inspect` of a checkpoint ------------===//
#pragma once
#include "llvm/ADT/StringRef.h"

namespace partita {

/// Whether `dir` is a checkpoint, or a folder of them (its `latest`).
bool isCheckpointFolder(llvm::StringRef dir);
/// Prints the checkpoint `dir` names: its progress, the layout it was saved
/// under, its files and tensors (`all`: every tensor, else the first ones).
int inspectCheckpoint(llvm::StringRef dir, bool all);

} // namespace partita
