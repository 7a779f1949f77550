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

} // namespace partita
