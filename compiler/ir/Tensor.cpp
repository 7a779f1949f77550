//===- Tensor.cpp ---------------------------------------------------------===//
#include "compiler/ir/Tensor.h"
#include "llvm/ADT/Hashing.h"
#include <cmath>
#include <cstring>
#include <limits>

namespace partita {

int64_t numElements(llvm::ArrayRef<int64_t> shape) {
  int64_t n = 1;
  bool saturated = false;
  for (int64_t d : shape) {
    if (d <= 0)
      return 0; // a zero (or dynamic) dimension: nothing to count
    saturated = saturated || __builtin_mul_overflow(n, d, &n);
  }
  return saturated ? std::numeric_limits<int64_t>::max() : n;
}

std::string shapeString(llvm::ArrayRef<int64_t> shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i)
      s += ",";
    s += shape[i] == kDynamicDim ? std::string("?") : std::to_string(shape[i]);
  }
  return s + "]";
}

bool TensorType::isStatic() const {
  if (!known)
    return false;
  for (int64_t d : shape)
    if (d < 0)
      return false;
  return true;
}

std::string TensorType::str() const {
  return dtypeName(dtype).str() + (known ? shapeString(shape) : std::string("[*]"));
}

Tensor::Tensor(DType dtype, Shape shape, std::shared_ptr<const std::vector<uint8_t>> bytes)
    : dtype_(dtype), shape_(std::move(shape)), bytes_(std::move(bytes)) {}

Tensor Tensor::zeros(DType dtype, Shape shape) {
  auto bytes = std::make_shared<std::vector<uint8_t>>(numElements(shape) * dtypeSize(dtype));
  return Tensor(dtype, std::move(shape), std::move(bytes));
}

// IEEE half <-> float, round to nearest even.
namespace {
template <typename T> T load(const uint8_t *p, int64_t i) {
  T v;
  std::memcpy(&v, p + i * sizeof(T), sizeof(T));
  return v;
}
template <typename T> void store(uint8_t *p, int64_t i, T v) {
  std::memcpy(p + i * sizeof(T), &v, sizeof(T));
}

/// v converted to I, saturating, NaN as 0 (a plain cast of an out-of-range
/// double is undefined; folded integer arithmetic can produce one).
template <typename I> I saturate(double v) {
  if (!(v == v))
    return 0;
  if (v <= static_cast<double>(std::numeric_limits<I>::min()))
    return std::numeric_limits<I>::min();
  if (v >= static_cast<double>(std::numeric_limits<I>::max()))
    return std::numeric_limits<I>::max();
  return static_cast<I>(v);
}

void storeDouble(DType t, uint8_t *p, int64_t i, double v) {
  switch (t) {
  case DType::F32: store<float>(p, i, static_cast<float>(v)); break;
  case DType::F64: store<double>(p, i, v); break;
  case DType::F16: store<uint16_t>(p, i, floatToHalf(static_cast<float>(v))); break;
  case DType::BF16: store<uint16_t>(p, i, floatToBf16(static_cast<float>(v))); break;
  case DType::I64: store<int64_t>(p, i, saturate<int64_t>(v)); break;
  case DType::I32: store<int32_t>(p, i, saturate<int32_t>(v)); break;
  case DType::I16: store<int16_t>(p, i, saturate<int16_t>(v)); break;
  case DType::I8: store<int8_t>(p, i, saturate<int8_t>(v)); break;
  case DType::U8: store<uint8_t>(p, i, saturate<uint8_t>(v)); break;
  case DType::U16: store<uint16_t>(p, i, saturate<uint16_t>(v)); break;
  case DType::Bool: store<uint8_t>(p, i, v != 0 ? 1 : 0); break;
  }
}

void storeInt(DType t, uint8_t *p, int64_t i, int64_t v) {
  if (t == DType::I64)
    store<int64_t>(p, i, v);
  else
    storeDouble(t, p, i, static_cast<double>(v));
}
} // namespace

Tensor Tensor::fromDoubles(DType dtype, Shape shape, llvm::ArrayRef<double> values) {
  auto bytes = std::make_shared<std::vector<uint8_t>>(values.size() * dtypeSize(dtype));
  for (size_t i = 0; i < values.size(); ++i)
    storeDouble(dtype, bytes->data(), static_cast<int64_t>(i), values[i]);
  return Tensor(dtype, std::move(shape), std::move(bytes));
}

Tensor Tensor::fromInts(DType dtype, Shape shape, llvm::ArrayRef<int64_t> values) {
  auto bytes = std::make_shared<std::vector<uint8_t>>(values.size() * dtypeSize(dtype));
  for (size_t i = 0; i < values.size(); ++i)
    storeInt(dtype, bytes->data(), static_cast<int64_t>(i), values[i]);
  return Tensor(dtype, std::move(shape), std::move(bytes));
}

double Tensor::at(int64_t i) const {
  const uint8_t *p = data();
  switch (dtype_) {
  case DType::F32: return load<float>(p, i);
  case DType::F64: return load<double>(p, i);
  case DType::F16: return halfToFloat(load<uint16_t>(p, i));
  case DType::BF16: return bf16ToFloat(load<uint16_t>(p, i));
  case DType::I64: return static_cast<double>(load<int64_t>(p, i));
  case DType::I32: return load<int32_t>(p, i);
  case DType::I16: return load<int16_t>(p, i);
  case DType::I8: return load<int8_t>(p, i);
  case DType::U8: return load<uint8_t>(p, i);
  case DType::U16: return load<uint16_t>(p, i);
  case DType::Bool: return load<uint8_t>(p, i) ? 1.0 : 0.0;
  }
  return 0;
}

int64_t Tensor::intAt(int64_t i) const {
  if (dtype_ == DType::I64)
    return load<int64_t>(data(), i);
  // A float beyond int64 (or NaN) saturates rather than being undefined.
  double v = at(i);
  if (std::isnan(v))
    return 0;
  if (v >= 9.2233720368547758e18)
    return INT64_MAX;
  if (v <= -9.2233720368547758e18)
    return INT64_MIN;
  return static_cast<int64_t>(v);
}

std::vector<double> Tensor::toDoubles() const {
  std::vector<double> out(static_cast<size_t>(numel()));
  for (int64_t i = 0; i < numel(); ++i)
    out[i] = at(i);
  return out;
}

std::vector<int64_t> Tensor::toInts() const {
  std::vector<int64_t> out(static_cast<size_t>(numel()));
  for (int64_t i = 0; i < numel(); ++i)
    out[i] = intAt(i);
  return out;
}

bool Tensor::sameContent(const Tensor &o) const {
  return dtype_ == o.dtype_ && shape_ == o.shape_ && byteSize() == o.byteSize() &&
         (byteSize() == 0 || std::memcmp(data(), o.data(), byteSize()) == 0);
}

size_t Tensor::hash() const {
  return llvm::hash_combine(static_cast<int>(dtype_),
                            llvm::hash_combine_range(shape_.begin(), shape_.end()),
                            llvm::hash_combine_range(data(), data() + byteSize()));
}

Tensor transposeTensor(const Tensor &t, llvm::ArrayRef<int64_t> perm) {
  const Shape &in = t.shape();
  int64_t rank = static_cast<int64_t>(in.size()), n = t.numel();
  size_t elem = dtypeSize(t.dtype());
  Shape out;
  for (int64_t d : perm)
    out.push_back(in[d]);
  std::vector<int64_t> strides(rank, 1);
  for (int64_t d = rank - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * in[d + 1];
  auto bytes = std::make_shared<std::vector<uint8_t>>(n * elem);
  for (int64_t i = 0; i < n; ++i) {
    int64_t rem = i, src = 0;
    for (int64_t d = rank - 1; d >= 0; --d) {
      src += (rem % out[d]) * strides[perm[d]];
      rem /= out[d];
    }
    std::memcpy(bytes->data() + i * elem, t.data() + src * elem, elem);
  }
  return Tensor(t.dtype(), std::move(out), std::move(bytes));
}

} // namespace partita
