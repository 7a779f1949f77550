//===- LayerNames.h - which transformer layer a node belongs to -----------===//
//
// torch.onnx names a node after its module path ("/h.3/attn/MatMul",
// "/model/layers.3/self_attn/...", "/encoder/layer.3/..."), and a weight
// after its parameter ("h.3.attn.c_attn.weight"). A layer is the path up to
// its first numbered part: a ModuleList index, which follows a '.' and is
// followed by more of the path (a number after '_' is an op counter,
// "/Add_1"; one at the very end a copy's, "MatMul.1"). A model whose names
// number no layers has them found from its dataflow (LayerStructure.h).
//===----------------------------------------------------------------------===//
#pragma once
#include "compiler/ir/Graph.h"
#include <string>

namespace partita {

/// "h.3" for "/h.3/attn/MatMul" and for "h.3.attn.c_attn.weight",
/// "model.layers.3" for "/model/layers.3/mlp/..."; "" when the name has no
/// numbered part.
std::string layerKey(llvm::StringRef name);

/// The layer of a node: from its name, else from a weight it reads that no
/// node named in another layer reads; "" when neither says.
std::string layerOf(const Node &n);

} // namespace partita
