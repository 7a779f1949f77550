//===- LayerNames.cpp -----------------------------------------------------===//
#include "passes/LayerNames.h"
#include "llvm/ADT/STLExtras.h"
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
    // A path component: more follows ("h.3/attn", "h.3.weight"). A number
    // at the very end is a counter ("MatMul.1": a pass's copy), no layer.
    if (end < name.size() && (name[end] == '.' || name[end] == '/')) {
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
  // Else a weight's layer ("layers.3.q.weight" for a loop-built model's
  // "/q/MatMul"), unless nodes named in another layer read that weight too:
  // torch.onnx merges equal initializers (freshly initialised, every
  // LayerNorm's ones, ln_f's among them, become one named after h.0's), and
  // such a shared weight says nothing of where its reader belongs.
  for (size_t i = 0; i < n.numInputs() && key.empty(); ++i) {
    const Value *in = n.input(i);
    if (!in || !in->definingNode() || !in->definingNode()->is("Weight"))
      continue;
    std::string weightKey = layerKey(in->definingNode()->stringAttr("name", ""));
    bool shared = llvm::any_of(in->users(), [&](const Node *u) {
      std::string named = layerKey(u->name());
      return !named.empty() && named != weightKey;
    });
    if (!shared)
      key = weightKey;
  }
  return key;
}

} // namespace partita
