//===- OnnxExport.h - Partita IR → standard ONNX --------------------------===//
//
// Writes a model that passes onnx.checker.check_model(full_check=True) and that
// ONNX Runtime runs. Partita's canonical ops (domain "partita": Linear, Gelu,
// FastGelu) are emitted together with model-local ONNX functions that define
// them in standard ops, so any ONNX consumer can run the file.
//
//===----------------------------------------------------------------------===//
#pragma once
#include "compiler/ir/Graph.h"
#include "compiler/support/OutputFile.h"
#include "llvm/Support/Error.h"
#include <map>
#include <optional>

namespace partita {

/// Large constants shared by the programs of one plan (a causal mask every
/// pipeline stage's forward and backward read): written once into one file
/// beside the programs' folders, each distinct tensor once, and referred to
/// as ONNX external data. Compile makes one per plan and commits it after the
/// last program.
class SharedConstants {
public:
  /// `path`: the file; `location`: how a program refers to it (relative to
  /// its folder, e.g. ../constants.bin).
  SharedConstants(std::string path, std::string location)
      : path_(std::move(path)), location_(std::move(location)) {}
  /// Tensors of at least this many bytes are shared.
  static constexpr size_t kMinBytes = 64 * 1024;
  /// Where `t`'s bytes are in the file, writing them if they are new.
  llvm::Expected<uint64_t> place(const Tensor &t);
  const std::string &location() const { return location_; }
  /// Puts the file in place (nothing is written when no tensor was shared).
  llvm::Error commit();
  bool empty() const { return !out_; }

private:
  std::string path_, location_;
  std::optional<OutputFile> out_;
  uint64_t size_ = 0;
  std::map<std::string, uint64_t> offsetOf_; // by the tensor's type and bytes' digest
  std::map<const uint8_t *, std::pair<Tensor, uint64_t>> offsetOfBytes_; // by the bytes' address (kept alive)
};

struct ExportOptions {
  /// When set, weights go to this file (relative to the model's folder) as
  /// ONNX external data instead of inline, written one tensor at a time
  /// (created only when a weight goes there).
  std::string externalDataFile;
  /// Weights that live in an external data file already (the model's own)
  /// are written as references to it, never copied: ONNX external data
  /// (absolute location, offset, length) where the weight is a contiguous
  /// run of the file (a whole weight, a row shard), and otherwise the whole
  /// stored tensor's run plus the slice (keys partita_stored_shape,
  /// partita_view_start, partita_perm) that Partita's importer reads with
  /// ImportOptions::trustedLocations.
  bool weightsByReference = false;
  /// When set, Constants of at least SharedConstants::kMinBytes become
  /// initializers referring to the plan's shared constants file.
  SharedConstants *sharedConstants = nullptr;
};

llvm::Error exportOnnx(const Graph &g, llvm::StringRef path, const ExportOptions &opts = {});

} // namespace partita
