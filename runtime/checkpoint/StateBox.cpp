//===- StateBox.cpp -------------------------------------------------------===//
//
// A piece is a list of runs: each row of its box (clipped to its flat range)
// is contiguous in the whole tensor's row-major order, since the view's last
// dimension is the inner part of the whole's last. Two pieces overlap where
// their runs, sorted by their first element in the whole, intersect.
//===----------------------------------------------------------------------===//
#include "runtime/checkpoint/StateBox.h"
#include <algorithm>
#include <cstring>
#include <vector>

namespace partita::rt {

StateBox StateBox::whole(Shape outer, Shape start, Shape extent) {
  StateBox b{std::move(outer), std::move(start), std::move(extent)};
  b.flatEnd = b.boxNumel();
  return b;
}

namespace {

struct Run {
  int64_t global, local, length; // whole-tensor index, index in the piece, elements
};

std::vector<Run> runsOf(const StateBox &b, const Shape &whole) {
  std::vector<Run> runs;
  if (b.numel() <= 0)
    return runs;
  if (whole.empty()) {
    runs.push_back({0, 0, 1});
    return runs;
  }
  // For each view dimension: the whole's dimension it belongs to and its
  // stride there (an outer part steps n / outer of that dimension).
  std::vector<size_t> dimOf;
  Shape stepInDim;
  for (size_t d = 0; d < whole.size(); ++d) {
    int64_t o = d < b.outer.size() ? b.outer[d] : 1;
    if (o > 1) {
      dimOf.push_back(d);
      stepInDim.push_back(whole[d] / o);
    }
    dimOf.push_back(d);
    stepInDim.push_back(1);
  }
  Shape wholeStride(whole.size(), 1);
  for (size_t d = whole.size() - 1; d-- > 0;)
    wholeStride[d] = wholeStride[d + 1] * whole[d + 1];
  const size_t rank = dimOf.size();
  const int64_t rowLength = b.extent[rank - 1];
  const int64_t rows = b.boxNumel() / std::max<int64_t>(rowLength, 1);
  // Only the rows the flat range touches.
  for (int64_t row = b.flatBegin / rowLength; row < rows && row * rowLength < b.flatEnd; ++row) {
    int64_t rest = row, global = 0;
    for (size_t v = rank; v-- > 0;) {
      int64_t idx = b.start[v];
      if (v + 1 < rank) {
        idx += rest % b.extent[v];
        rest /= b.extent[v];
      }
      global += idx * stepInDim[v] * wholeStride[dimOf[v]];
    }
    int64_t lo = std::max(row * rowLength, b.flatBegin), hi = std::min((row + 1) * rowLength, b.flatEnd);
    runs.push_back({global + (lo - row * rowLength), lo - b.flatBegin, hi - lo});
  }
  std::sort(runs.begin(), runs.end(), [](const Run &a, const Run &c) { return a.global < c.global; });
  return runs;
}

} // namespace

int64_t copyOverlap(const void *src, const StateBox &from, void *dst, const StateBox &to, const Shape &whole,
                    size_t elemSize) {
  std::vector<Run> a = runsOf(from, whole), b = runsOf(to, whole);
  const auto *s = static_cast<const uint8_t *>(src);
  auto *t = static_cast<uint8_t *>(dst);
  int64_t copied = 0;
  for (size_t i = 0, j = 0; i < a.size() && j < b.size();) {
    int64_t lo = std::max(a[i].global, b[j].global);
    int64_t hi = std::min(a[i].global + a[i].length, b[j].global + b[j].length);
    if (lo < hi && elemSize > 0) {
      std::memcpy(t + static_cast<size_t>(b[j].local + lo - b[j].global) * elemSize,
                  s + static_cast<size_t>(a[i].local + lo - a[i].global) * elemSize,
                  static_cast<size_t>(hi - lo) * elemSize);
    }
    copied += std::max<int64_t>(hi - lo, 0);
    if (a[i].global + a[i].length < b[j].global + b[j].length)
      ++i;
    else
      ++j;
  }
  return copied;
}

bool piecesTile(const std::vector<StateBox> &pieces, const Shape &whole) {
  std::vector<Run> all;
  for (const StateBox &b : pieces) {
    std::vector<Run> r = runsOf(b, whole);
    all.insert(all.end(), r.begin(), r.end());
  }
  std::sort(all.begin(), all.end(), [](const Run &a, const Run &c) { return a.global < c.global; });
  int64_t next = 0; // the first element no run has held yet
  for (const Run &r : all) {
    if (r.global != next)
      return false; // a gap, or an element held twice
    next += r.length;
  }
  return next == numElements(whole);
}

} // namespace partita::rt
