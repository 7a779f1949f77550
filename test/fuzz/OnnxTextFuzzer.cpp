//===- OnnxTextFuzzer.cpp - importOnnx on the ONNX text syntax ------------===//
#include "OnnxImportFuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  return partita::fuzz::importOnnxInput(data, size, /*text=*/true);
}
