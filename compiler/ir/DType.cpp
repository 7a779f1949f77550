//===- DType.cpp ----------------------------------------------------------===//
#include "compiler/ir/DType.h"

namespace partita {

namespace {
struct DTypeInfo {
  DType type;
  const char *name;
  size_t size;
  int onnx; // onnx::TensorProto_DataType
};
// One table for every property so the mappings cannot drift apart.
constexpr DTypeInfo kInfo[] = {
    {DType::F32, "f32", 4, 1},  {DType::F16, "f16", 2, 10},
    {DType::BF16, "bf16", 2, 16}, {DType::F64, "f64", 8, 11},
    {DType::I64, "i64", 8, 7},  {DType::I32, "i32", 4, 6},
    {DType::I16, "i16", 2, 5},  {DType::I8, "i8", 1, 3},
    {DType::U8, "u8", 1, 2},    {DType::U16, "u16", 2, 4},
    {DType::Bool, "bool", 1, 9},
};
const DTypeInfo &info(DType t) { return kInfo[static_cast<int>(t)]; }
} // namespace

llvm::StringRef dtypeName(DType t) { return info(t).name; }
size_t dtypeSize(DType t) { return info(t).size; }
bool isFloat(DType t) {
  return t == DType::F32 || t == DType::F16 || t == DType::BF16 || t == DType::F64;
}

std::optional<DType> parseDType(llvm::StringRef s) {
  for (const auto &i : kInfo)
    if (s == i.name)
      return i.type;
  return std::nullopt;
}

std::optional<DType> dtypeFromOnnx(int onnxType) {
  for (const auto &i : kInfo)
    if (i.onnx == onnxType)
      return i.type;
  return std::nullopt;
}

int dtypeToOnnx(DType t) { return info(t).onnx; }

std::string onnxDTypeName(int onnxType) {
  // onnx.proto's TensorProto.DataType, in enum order.
  static const char *const kNames[] = {
      "undefined", "float",    "uint8",        "int8",           "uint16",     "int16",
      "int32",     "int64",    "string",       "bool",           "float16",    "double",
      "uint32",    "uint64",   "complex64",    "complex128",     "bfloat16",   "float8e4m3fn",
      "float8e4m3fnuz", "float8e5m2", "float8e5m2fnuz", "uint4", "int4", "float4e2m1"};
  if (onnxType >= 0 && onnxType < static_cast<int>(sizeof(kNames) / sizeof(kNames[0])))
    return kNames[onnxType];
  return "element type " + std::to_string(onnxType);
}

} // namespace partita
