//===- TensorView.h - a typed, shaped window on device memory -------------===//
#pragma once
#include "compiler/ir/Tensor.h"

namespace partita::rt {

struct TensorView {
  DType dtype = DType::F32;
  Shape shape;
  void *data = nullptr; // device memory; nullptr for an omitted optional input

  int64_t numel() const { return numElements(shape); }
  size_t bytes() const { return static_cast<size_t>(numel()) * dtypeSize(dtype); }
  bool present() const { return data != nullptr || numel() == 0; }
  template <typename T> T *as() const { return static_cast<T *>(data); }
};

} // namespace partita::rt
