//===- LayerNames.cpp -----------------------------------------------------===//
#include "passes/LayerNames.h"
#include "llvm/ADT/StringExtras.h"
#include <algorithm>

namespace partita {

std::string layerKey(llvm::StringRef name) {
  for (size_t i = 0; i + 1 < name.size(); ++i) {
    if (name[i] != '.' || !llvm::isDigit(name[i + 1]))
      continue;
    size_t end = i + 1;
    while (end < name.size() && llvm::isDigit(name[end]))
      ++end;
    if (end == name.size() || name[end] == '.' || name[end] == '/') {
      // One spelling for a node's path and a weight's name: "/h.3" and "h.3" are "h.3".
      std::string key = name.take_front(end).ltrim('/').str();
      std::replace(key.begin(), key.end(), '/', '.');
      return key;
    }
  }
  return "";
}

std::string layerOf(const Node &n) {
  std::string key = layerKey(n.name());
  // Only a node without a name is known by its weights': a named one outside
  // the numbered modules ("/ln_f/...") stays outside, though it may read a
  // layer's weight (torch.onnx shares equal initializers: every LayerNorm's
  // ones at initialisation, ln_f's among them, become one, named after h.0's).
  for (size_t i = 0; i < n.numInputs() && key.empty() && n.name().empty(); ++i)
    if (const Value *in = n.input(i); in && in->definingNode() && in->definingNode()->is("Weight"))
      key = layerKey(in->definingNode()->stringAttr("name", ""));
  return key;
}

} // namespace partita
