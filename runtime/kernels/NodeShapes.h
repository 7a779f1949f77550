//===- NodeShapes.h - what every device's kernels read off a node ----------===//
//
// Layouts and constants a kernel derives from its node the same way on every
// device (runtime/cpu, runtime/cuda): written once here.
//===----------------------------------------------------------------------===//
#pragma once
#include "compiler/ir/Graph.h"
#include <cstdint>
#include <vector>

namespace partita::rt {

/// A shape split around `axis` into outer x len x inner (a softmax's or a
/// concatenation's view of it).
struct AxisSplit {
  int64_t outer = 1, len = 1, inner = 1;
  AxisSplit(const Shape &s, int64_t axis) {
    for (int64_t i = 0; i < static_cast<int64_t>(s.size()); ++i)
      (i < axis ? outer : i == axis ? len : inner) *= s[i];
  }
};

/// Which dims of its input a Reduce* node reduces (its `axes` attribute, or
/// its constant axes input; none given: all, unless noop_with_empty_axes);
/// empty when the axes input is not a constant.
inline std::vector<bool> reducedDims(const Node &n) {
  const Shape &s = n.input(0)->type().shape;
  std::vector<int64_t> axes = n.intsAttr("axes");
  if (n.numInputs() > 1 && n.input(1)) {
    const Tensor *t = constantValue(n.input(1));
    if (!t)
      return {};
    axes = t->toInts();
  }
  std::vector<bool> reduced(s.size(), axes.empty() && !n.intAttr("noop_with_empty_axes", 0));
  for (int64_t a : axes) {
    int64_t rank = static_cast<int64_t>(s.size());
    reduced[static_cast<size_t>(a < 0 ? a + rank : a)] = true;
  }
  return reduced;
}

/// partita.AdamW's constants (torch.optim.AdamW's defaults where absent).
struct AdamWConstants {
  float beta1, beta2, epsilon, weightDecay;
  explicit AdamWConstants(const Node &n)
      : beta1(static_cast<float>(n.floatAttr("beta1", 0.9))), beta2(static_cast<float>(n.floatAttr("beta2", 0.999))),
        epsilon(static_cast<float>(n.floatAttr("epsilon", 1e-8))),
        weightDecay(static_cast<float>(n.floatAttr("weight_decay", 0.01))) {}
};

} // namespace partita::rt
