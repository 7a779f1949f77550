//===- WeightStore.cpp ----------------------------------------------------===//
#include "compiler/ir/WeightStore.h"
#include <fstream>

namespace partita {

const WeightRef *WeightStore::find(llvm::StringRef name) const {
  auto it = refs_.find(name);
  return it == refs_.end() ? nullptr : &it->second;
}

llvm::Expected<Tensor> WeightStore::load(llvm::StringRef name) const {
  auto fail = [&](const llvm::Twine &msg) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "weight '" + name + "': " + msg);
  };
  const WeightRef *ref = find(name);
  if (!ref || !ref->hasData())
    return fail("no data is attached (graph parsed from IR text?)");
  if (ref->inlineBytes)
    return Tensor(ref->type.dtype, ref->type.shape, ref->inlineBytes);
  std::ifstream in(ref->file, std::ios::binary);
  if (!in)
    return fail("cannot open external data file '" + ref->file + "'");
  auto bytes = std::make_shared<std::vector<uint8_t>>(ref->length);
  in.seekg(static_cast<std::streamoff>(ref->offset));
  in.read(reinterpret_cast<char *>(bytes->data()), static_cast<std::streamsize>(ref->length));
  if (!in)
    return fail("external data file '" + ref->file + "' is shorter than offset " +
                llvm::Twine(ref->offset) + " + length " + llvm::Twine(ref->length));
  return Tensor(ref->type.dtype, ref->type.shape, std::move(bytes));
}

} // namespace partita
