//===- Broadcast.cpp ------------------------------------------------------===//
#include "compiler/ops/Broadcast.h"

namespace partita {

std::optional<Shape> broadcastShapes(llvm::ArrayRef<Shape> shapes) {
  size_t rank = 0;
  for (const auto &s : shapes)
    rank = std::max(rank, s.size());
  Shape out(rank, 1);
  for (const auto &s : shapes) {
    size_t off = rank - s.size();
    for (size_t i = 0; i < s.size(); ++i) {
      int64_t &o = out[off + i];
      int64_t d = s[i];
      if (d == 1)
        continue;
      if (o == 1)
        o = d;
      else if (o != d)
        return std::nullopt;
    }
  }
  return out;
}

llvm::SmallVector<int64_t, 4> stridesOf(llvm::ArrayRef<int64_t> shape) {
  llvm::SmallVector<int64_t, 4> strides(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * shape[i + 1];
  return strides;
}

BroadcastIndexer::BroadcastIndexer(llvm::ArrayRef<int64_t> inShape,
                                   llvm::ArrayRef<int64_t> outShape)
    : outShape_(outShape.begin(), outShape.end()) {
  auto strides = stridesOf(inShape);
  size_t off = outShape.size() - inShape.size();
  inStrides_.assign(outShape.size(), 0);
  for (size_t i = 0; i < inShape.size(); ++i)
    inStrides_[off + i] = inShape[i] == 1 ? 0 : strides[i];
}

int64_t BroadcastIndexer::operator()(int64_t outIndex) const {
  int64_t in = 0;
  for (int64_t d = static_cast<int64_t>(outShape_.size()) - 1; d >= 0; --d) {
    int64_t extent = outShape_[d];
    in += (outIndex % extent) * inStrides_[d];
    outIndex /= extent;
  }
  return in;
}

} // namespace partita
