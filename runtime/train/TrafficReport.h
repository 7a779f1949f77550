//===- TrafficReport.h - what a training step sends per rank (--profile) ---===//
//
// The bytes this rank's communicators counted (Communicator::traffic(), the
// ring algorithms' cost), per step and per mesh axis, and on the
// data-parallel axis in units of the ring's share of the rank's parameter
// bytes Ψ: an all-reduce of every gradient is 2 Ψ, a ZeRO-2 step (reduce-
// scatter and all-gather) 2 Ψ, ZeRO-1 here (all-reduce and all-gather) 3 Ψ.
//===----------------------------------------------------------------------===//
#pragma once
#include "runtime/session/Session.h"
#include "llvm/Support/raw_ostream.h"

namespace partita::rt {

/// Prints `session`'s traffic over `steps` steps; `paramBytes`: the bytes of
/// the parameters this rank updates (its tp shard of each).
void printTraffic(llvm::raw_ostream &os, const Session &session, int steps, double paramBytes);

} // namespace partita::rt
