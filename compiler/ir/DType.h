//===- DType.h - element types of IR values -------------------------------===//
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include "llvm/ADT/StringRef.h"

namespace partita {

/// Element type of a tensor. The order is not significant; names follow the
/// text IR spelling (f32, i64, ...).
enum class DType : uint8_t { F32, F16, BF16, F64, I64, I32, I16, I8, U8, U16, Bool };

llvm::StringRef dtypeName(DType t);
std::optional<DType> parseDType(llvm::StringRef s);
size_t dtypeSize(DType t);
bool isFloat(DType t);
/// bf16 or fp16: mixed precision's 16-bit floats.
inline bool isHalfFloat(DType t) { return t == DType::BF16 || t == DType::F16; }

/// ONNX TensorProto.DataType <-> DType.
std::optional<DType> dtypeFromOnnx(int onnxType);
int dtypeToOnnx(DType t);
/// The TensorProto.DataType name of an ONNX element type, lower-cased
/// ("float", "complex64", "string"), for messages; "element type N" when the
/// number is not one ONNX defines.
std::string onnxDTypeName(int onnxType);

} // namespace partita
