//===- Broadcast.h - numpy-style broadcasting helpers ---------------------===//
#pragma once
#include "compiler/ir/Tensor.h"
#include <optional>

namespace partita {

/// Multidirectional (numpy) broadcast of shapes; nullopt when incompatible.
std::optional<Shape> broadcastShapes(llvm::ArrayRef<Shape> shapes);

/// Maps a flat index in `outShape` to the flat index of an input of shape
/// `inShape` broadcast to it.
class BroadcastIndexer {
public:
  BroadcastIndexer(llvm::ArrayRef<int64_t> inShape, llvm::ArrayRef<int64_t> outShape);
  int64_t operator()(int64_t outIndex) const;

private:
  Shape outShape_;
  llvm::SmallVector<int64_t, 4> inStrides_; // 0 on broadcast dims
};

/// Row-major strides of a shape.
llvm::SmallVector<int64_t, 4> stridesOf(llvm::ArrayRef<int64_t> shape);

} // namespace partita
