//===- ReplicaInference.h - inference over data-parallel replicas ---------===//
//
// An inference plan compiled with --dp D holds D replicas of the model (each
// tp x pp ranks), which share no state: the batches of a launch are dealt out
// round robin, replica r running micro-batches r, r + D, r + 2D, ... (each
// replica pipelined under pp). The replicas' writers (each replica's last
// stage, tp rank 0) then send their outputs over dp to replica 0's, which
// puts micro-batch j back at place j and writes them, as one rank would.
//===----------------------------------------------------------------------===//
#pragma once
#include "compiler/ir/Tensor.h"
#include "runtime/comm/Communicator.h"
#include "llvm/Support/Error.h"
#include <vector>

namespace partita {

/// The micro-batches (of `batches`) replica `replica` of `replicas` runs.
std::vector<size_t> replicaBatches(size_t batches, int64_t replica, int64_t replicas);

/// On the replicas' writers: `outs[o]` holds output o of this replica's
/// micro-batches (replicaBatches order). Replica 0's gets every micro-batch's,
/// in order, from the others over `dp` (null: one replica); the others send
/// theirs and are left with none.
llvm::Error gatherReplicaOutputs(rt::Communicator *dp, size_t batches, std::vector<std::vector<Tensor>> &outs);

} // namespace partita
