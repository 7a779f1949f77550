//===- MicroBatches.cpp ---------------------------------------------------===//
#include "tools/MicroBatches.h"
#include "tools/ToolCommon.h"
#include <cstring>

namespace partita {

llvm::Expected<MicroBatches> splitMicroBatches(const std::vector<TensorSpec> &compiled,
                                               const llvm::StringMap<Tensor> &given) {
  int64_t count = 1;
  std::string by; // the input that set the count
  llvm::StringMap<bool> split;
  for (const TensorSpec &spec : compiled) {
    auto it = given.find(spec.name);
    if (it == given.end())
      continue;
    const Shape &want = spec.type.shape, &have = it->second.shape();
    if (have == want || have.size() != want.size() || want.empty() || want[0] <= 0 || have[0] % want[0] != 0 ||
        !std::equal(want.begin() + 1, want.end(), have.begin() + 1))
      continue;
    int64_t k = have[0] / want[0];
    if (!by.empty() && k != count)
      return fail("--input " + spec.name + " holds " + llvm::Twine(k) + " batches of the compiled " +
                  shapeString(want) + ", --input " + by + " " + llvm::Twine(count) +
                  ": micro-batched inputs must hold the same number");
    count = k;
    by = spec.name;
    split[spec.name] = true;
  }
  MicroBatches out;
  out.batches.resize(static_cast<size_t>(count));
  for (const auto &entry : given) {
    const Tensor &t = entry.getValue();
    if (!split.count(entry.getKey())) {
      for (auto &b : out.batches)
        b[entry.getKey()] = t;
      continue;
    }
    Shape part = t.shape();
    part[0] /= count;
    size_t bytes = t.byteSize() / static_cast<size_t>(count);
    for (int64_t j = 0; j < count; ++j) {
      auto slice = std::make_shared<std::vector<uint8_t>>(t.data() + j * bytes, t.data() + (j + 1) * bytes);
      out.batches[static_cast<size_t>(j)][entry.getKey()] = Tensor(t.dtype(), part, std::move(slice));
    }
  }
  return out;
}

llvm::Expected<Tensor> concatMicroBatches(llvm::StringRef name, const std::vector<Tensor> &parts) {
  if (parts.size() == 1)
    return parts[0];
  if (parts.empty() || parts[0].shape().empty())
    return fail("output " + name + " is a scalar: " + llvm::Twine(parts.size()) +
                " micro-batches' outputs cannot be concatenated on a batch dimension");
  Shape whole = parts[0].shape();
  auto bytes = std::make_shared<std::vector<uint8_t>>();
  for (size_t j = 0; j < parts.size(); ++j) {
    if (parts[j].shape() != parts[0].shape() || parts[j].dtype() != parts[0].dtype())
      return fail("output " + name + " of micro-batch " + llvm::Twine(j) + " is " + parts[j].type().str() +
                  ", of micro-batch 0 " + parts[0].type().str());
    bytes->insert(bytes->end(), parts[j].data(), parts[j].data() + parts[j].byteSize());
  }
  whole[0] *= static_cast<int64_t>(parts.size());
  return Tensor(parts[0].dtype(), whole, std::move(bytes));
}

} // namespace partita
