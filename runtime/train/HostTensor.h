//===- HostTensor.h - host tensors as program feeds, and back -------------===//
//
// The CPU device reads host memory directly: the training loop feeds host
// tensors as views and copies parameter buffers into host tensors to write.
//===----------------------------------------------------------------------===//
#pragma once
#include "compiler/ir/Tensor.h"
#include "runtime/core/TensorView.h"
#include <memory>
#include <vector>

namespace partita::rt {

inline TensorView viewOf(const Tensor &t) { return TensorView{t.dtype(), t.shape(), const_cast<uint8_t *>(t.data())}; }

inline Tensor hostCopy(const TensorView &v) {
  const auto *p = static_cast<const uint8_t *>(v.data);
  return Tensor(v.dtype, v.shape, std::make_shared<std::vector<uint8_t>>(p, p + v.bytes()));
}

} // namespace partita::rt
