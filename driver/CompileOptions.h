//===- CompileOptions.h - what one compile is asked to do -----------------===//
//
// The options of compileModel (driver/Compile.h), one field per flag of
// `partita compile` (tools/CompileCommand.cpp maps the flags to them; a
// DeepSpeed config sets flags first). Defaults are the flags' defaults.
// Errors from validate() name the flag, as a user wrote it.
//===----------------------------------------------------------------------===//
#pragma once
#include "compiler/plan/AdamWOptions.h"
#include "llvm/Support/Error.h"
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace partita {

struct CompileOptions {
  std::string model;                    // the .onnx file
  std::vector<std::string> inputShapes; // NAME=D1xD2..., fixing an input's shape

  // The layout.
  int tp = 1, pp = 1, dp = 1;
  int virtualStages = 1;
  std::vector<int> ppLayers;         // layers per stage
  std::vector<std::string> ppCuts;   // the values each stage boundary cuts
  bool sequenceParallel = false;
  bool allowReplicated = false;

  // Training.
  bool train = false;
  bool emitGradients = false; // one program returning the loss and every gradient
  std::string recompute = "none"; // none, selective, full
  std::string precision = "fp32"; // fp32, bf16, fp16
  int zero = 0;
  AdamWOptions adamw;
  std::vector<std::string> freeze, trainable;
  std::string trainableFile;
  bool tieEmbeddings = false, untieEmbeddings = false;
  double bucketMb = 25.0, allgatherBucketMb = 25.0;
  std::optional<int64_t> zero3Prefetch;  // elements in flight (unset: one parameter ahead)
  std::optional<int64_t> zero3Persist;   // elements below which a parameter stays whole (unset: 0)

  // The output.
  bool materializeWeights = false;

  /// Called with each warning or note line as compile finds it
  /// ("warning: ...", "note: ..."); unset: they are dropped.
  std::function<void(const std::string &)> diagnostic;
};

/// Checks the options against each other before anything is read: an error
/// names the flag and what it needs.
llvm::Error validate(const CompileOptions &o);

} // namespace partita
