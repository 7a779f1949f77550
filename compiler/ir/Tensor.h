//===- Tensor.h - typed shapes and small host tensors ---------------------===//
//
// TensorType is the (dtype, static shape) of an IR value. Tensor is a host
// buffer used for constants and for folding; weights are not Tensors until a
// pass asks the WeightStore for their bytes.
//
//===----------------------------------------------------------------------===//
#pragma once
#include "compiler/ir/DType.h"
#include "compiler/ir/FloatBits.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace partita {

using Shape = llvm::SmallVector<int64_t, 4>;
constexpr int64_t kDynamicDim = -1;

/// The product of the dimensions (0 when one is <= 0); a product past
/// int64 saturates at its maximum (the shape is then too large for anything).
int64_t numElements(llvm::ArrayRef<int64_t> shape);
std::string shapeString(llvm::ArrayRef<int64_t> shape);

struct TensorType {
  DType dtype = DType::F32;
  Shape shape;
  bool known = false; // false until shape inference ran for this value

  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
  int64_t numel() const { return numElements(shape); }
  bool isStatic() const;
  bool operator==(const TensorType &o) const {
    return dtype == o.dtype && shape == o.shape && known == o.known;
  }
  bool operator!=(const TensorType &o) const { return !(*this == o); }
  std::string str() const; // "f32[2,16]"
};

/// A dense host tensor. Data is shared and immutable once built, so copies are
/// cheap and constants can be deduplicated by content.
class Tensor {
public:
  Tensor() = default;
  Tensor(DType dtype, Shape shape, std::shared_ptr<const std::vector<uint8_t>> bytes);
  static Tensor zeros(DType dtype, Shape shape);
  /// Builds a tensor of `dtype` from doubles (rounded/truncated as a cast would).
  static Tensor fromDoubles(DType dtype, Shape shape, llvm::ArrayRef<double> values);
  static Tensor fromInts(DType dtype, Shape shape, llvm::ArrayRef<int64_t> values);

  DType dtype() const { return dtype_; }
  const Shape &shape() const { return shape_; }
  TensorType type() const { return TensorType{dtype_, shape_, true}; }
  int64_t numel() const { return numElements(shape_); }
  const uint8_t *data() const { return bytes_ ? bytes_->data() : nullptr; }
  size_t byteSize() const { return bytes_ ? bytes_->size() : 0; }

  double at(int64_t i) const;        // element i converted to double
  int64_t intAt(int64_t i) const;    // element i converted to int64
  std::vector<double> toDoubles() const;
  std::vector<int64_t> toInts() const;

  bool sameContent(const Tensor &o) const;
  size_t hash() const;

private:
  DType dtype_ = DType::F32;
  Shape shape_;
  std::shared_ptr<const std::vector<uint8_t>> bytes_;
};

/// `t` transposed: result dim i is `t`'s dim perm[i] (numpy.transpose).
Tensor transposeTensor(const Tensor &t, llvm::ArrayRef<int64_t> perm);

/// A 16-bit float of type `t` (isHalfFloat) widened, and a float rounded to one.
inline float widenHalf(DType t, uint16_t h) { return t == DType::BF16 ? bf16ToFloat(h) : halfToFloat(h); }
inline uint16_t roundToHalf(DType t, float f) { return t == DType::BF16 ? floatToBf16(f) : floatToHalf(f); }

} // namespace partita
