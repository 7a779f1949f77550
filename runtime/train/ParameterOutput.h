//===- ParameterOutput.h - a rank's trained parameter shards --------------===//
//
// Each rank writes its shards as <out>/rank<k>/<name>.npy (`partita merge`
// reads them back into the model). Under ZeRO-3 a rank holds only its part
// of each shard's flat, padded buffer: the data-parallel group gathers the
// parts first (one parameter at a time, as DeepSpeed's consolidation does).
//===----------------------------------------------------------------------===//
#pragma once
#include "compiler/ir/Tensor.h"
#include "runtime/comm/Communicator.h"
#include "runtime/core/Device.h"
#include "runtime/core/TensorView.h"
#include "llvm/Support/Error.h"
#include <string>
#include <vector>

namespace partita::rt {

/// Writes parameter `names[i]` from device buffer `params[i]` of `device`
/// (copied to the host). Where `partitioned[i]` (the plan's param_partitioned) the
/// buffer is this rank's ZeRO-3 part: the parts are gathered over `dpGroup`
/// into the shard `shards[i]` (the plan's param_types) first.
llvm::Error writeParameterShards(Device &device, llvm::StringRef outDir, int rank, llvm::ArrayRef<std::string> names,
                                 llvm::ArrayRef<const TensorView *> params, llvm::ArrayRef<TensorType> shards,
                                 const std::vector<bool> &partitioned, Communicator *dpGroup);

/// The whole shard (`shard`'s type) from this rank's `part` (host bytes) of
/// its flat buffer: every rank's part gathered over `group`, the padding dropped.
llvm::Expected<Tensor> gatherFlatPart(const TensorView &part, const TensorType &shard, Communicator &group);

} // namespace partita::rt
