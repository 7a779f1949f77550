//===- StateBoxReference.h - a piece's elements counted one by one ---------===//
//
// The tests' own reading of a StateBox: element k of a piece is placed by its
// multi-index in the view (each dimension with an outer factor as [outer,
// n / outer]), then back to the whole tensor's row-major index.
//===----------------------------------------------------------------------===//
#pragma once
#include "runtime/checkpoint/StateBox.h"

namespace partita::rt::testing {

/// The whole-tensor flat index of element k of piece `b` in a tensor of `whole` shape.
inline int64_t globalIndex(const StateBox &b, const Shape &whole, int64_t k) {
  int64_t local = b.flatBegin + k, g = 0;
  Shape idx(b.extent.size());
  for (size_t d = b.extent.size(); d-- > 0;) {
    idx[d] = b.start[d] + local % b.extent[d];
    local /= b.extent[d];
  }
  size_t v = 0;
  for (size_t d = 0; d < whole.size(); ++d) {
    int64_t o = d < b.outer.size() ? b.outer[d] : 1, i = idx[v++];
    if (o > 1)
      i = i * (whole[d] / o) + idx[v++];
    g = g * whole[d] + i;
  }
  return g;
}

} // namespace partita::rt::testing
