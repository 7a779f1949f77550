//===- ParameterOutput.cpp ------------------------------------------------===//
#include "runtime/train/ParameterOutput.h"
#include "runtime/io/Npy.h"
#include "runtime/core/DeviceTensor.h"
#include "llvm/Support/Path.h"
#include <algorithm>

namespace partita::rt {

static llvm::Error fail(const llvm::Twine &msg) { return llvm::createStringError(llvm::inconvertibleErrorCode(), msg); }

llvm::Expected<Tensor> gatherFlatPart(const TensorView &part, const TensorType &shard, Communicator &group) {
  int64_t n = shard.numel(), total = part.numel() * group.size();
  if (part.dtype != shard.dtype || total < n || total - n >= group.size()) // each block pads fewer than dp elements
    return fail("a parameter part of " + llvm::Twine(part.numel()) + " elements on " + llvm::Twine(group.size()) +
                " data-parallel ranks is not the flat buffer of a " + shard.str() + " shard");
  std::vector<uint8_t> flat(static_cast<size_t>(total) * dtypeSize(part.dtype));
  if (auto err = group.allGather(part.data, flat.data(), static_cast<size_t>(part.numel()), part.dtype))
    return std::move(err);
  flat.resize(static_cast<size_t>(n) * dtypeSize(part.dtype)); // the padding dropped
  return Tensor(shard.dtype, shard.shape, std::make_shared<std::vector<uint8_t>>(std::move(flat)));
}

llvm::Error writeParameterShards(Device &device, llvm::StringRef outDir, int rank, llvm::ArrayRef<std::string> names,
                                 llvm::ArrayRef<const TensorView *> params, llvm::ArrayRef<TensorType> shards,
                                 const std::vector<bool> &partitioned, Communicator *dpGroup) {
  llvm::SmallString<256> dir(outDir);
  llvm::sys::path::append(dir, "rank" + std::to_string(rank));
  std::vector<Tensor> values;
  for (size_t i = 0; i < params.size(); ++i) {
    const TensorView &p = *params[i];
    if (i < partitioned.size() && partitioned[i]) {
      if (i >= shards.size())
        return fail("parameter '" + names[i] + "' is partitioned but the plan has no shard type for it");
      if (!dpGroup)
        return fail("parameter '" + names[i] + "' holds " + llvm::Twine(p.numel()) + " elements, its shard " +
                    shards[i].str() + ", and there is no data-parallel group to gather its parts over");
      Tensor part = download(device, p);
      auto whole = gatherFlatPart(TensorView{part.dtype(), part.shape(), const_cast<uint8_t *>(part.data())}, shards[i], *dpGroup);
      if (!whole)
        return whole.takeError();
      values.push_back(std::move(*whole));
      continue;
    }
    values.push_back(download(device, p));
  }
  return writeNpyFiles(dir, names, values);
}

} // namespace partita::rt
