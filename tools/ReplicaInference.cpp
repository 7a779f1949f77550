//===- ReplicaInference.cpp -----------------------------------------------===//
#include "tools/ReplicaInference.h"
#include <memory>

namespace partita {

std::vector<size_t> replicaBatches(size_t batches, int64_t replica, int64_t replicas) {
  std::vector<size_t> mine;
  for (size_t j = static_cast<size_t>(replica); j < batches; j += static_cast<size_t>(std::max<int64_t>(replicas, 1)))
    mine.push_back(j);
  return mine;
}

llvm::Error gatherReplicaOutputs(rt::Communicator *dp, size_t batches, std::vector<std::vector<Tensor>> &outs) {
  if (!dp || dp->size() < 2)
    return llvm::Error::success();
  const int replicas = dp->size(), me = dp->rank();
  // Messages between two replicas keep their order (MPI does not overtake):
  // each sends its micro-batches in order, output by output, as replica 0
  // takes them. Tag o: output o.
  if (me != 0) {
    for (size_t i = 0; i < replicaBatches(batches, me, replicas).size(); ++i)
      for (size_t o = 0; o < outs.size(); ++o) {
        const Tensor &t = outs[o][i]; // as bytes: an output of any type
        if (auto err = dp->send(t.data(), t.byteSize(), DType::U8, 0, static_cast<int>(o)))
          return err;
      }
    for (auto &out : outs)
      out.clear();
    return llvm::Error::success();
  }
  std::vector<std::vector<Tensor>> all(outs.size());
  for (size_t j = 0; j < batches; ++j) {
    const int from = static_cast<int>(j % static_cast<size_t>(replicas));
    for (size_t o = 0; o < outs.size(); ++o) {
      if (from == 0) {
        all[o].push_back(outs[o][j / static_cast<size_t>(replicas)]);
        continue;
      }
      // Replica 0 runs micro-batch 0: every micro-batch's output o has its
      // type (the programs' shapes are static).
      const Tensor &like = outs[o].front();
      auto bytes = std::make_shared<std::vector<uint8_t>>(like.byteSize());
      if (auto err = dp->recv(bytes->data(), like.byteSize(), DType::U8, from, static_cast<int>(o)))
        return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                       "receiving micro-batch " + std::to_string(j) + "'s outputs from dp replica " +
                                           std::to_string(from) + ": " + llvm::toString(std::move(err)));
      all[o].push_back(Tensor(like.dtype(), like.shape(), std::move(bytes)));
    }
  }
  outs = std::move(all);
  return llvm::Error::success();
}

} // namespace partita
