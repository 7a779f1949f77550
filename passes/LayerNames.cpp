//===- LayerNames.cpp -----------------------------------------------------===//
#include "passes/LayerNames.h"
#include "llvm/ADT/StringExtras.h"

namespace partita {

std::string layerKey(llvm::StringRef name) {
  for (size_t i = 0; i + 1 < name.size(); ++i) {
    if (name[i] != '.' || !llvm::isDigit(name[i + 1]))
      continue;
    size_t end = i + 1;
    while (end < name.size() && llvm::isDigit(name[end]))
      ++end;
    if (end == name.size() || name[end] == '.' || name[end] == '/')
      return name.take_front(end).str();
  }
  return "";
}

std::string layerOf(const Node &n) {
  std::string key = layerKey(n.name());
  for (size_t i = 0; i < n.numInputs() && key.empty(); ++i)
    if (const Value *in = n.input(i); in && in->definingNode() && in->definingNode()->is("Weight"))
      key = layerKey(in->definingNode()->stringAttr("name", ""));
  return key;
}

} // namespace partita
