//===- OnnxImport.h - ONNX model → Partita IR -----------------------------===//
#pragma once
#include <map>
#include "compiler/ir/Graph.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Error.h"
#include <memory>

namespace onnx {
class TensorProto;
}

namespace partita {

struct ImportOptions {
  /// Fixes input dimensions: name → full static shape (from --input-shape).
  llvm::StringMap<Shape> inputShapes;
  /// Inputs whose values are fixed at compile time: they become Constants and
  /// the program is specialised to them (a static-shape compiler needs the
  /// values of inputs that feed shape operands, e.g. Reshape's shape).
  llvm::StringMap<Tensor> inputValues;
  /// Sizes for the dynamic dimensions of inputs not in `inputShapes`: each
  /// dynamic dimension i of input NAME takes dimension i of NAME's hint (a
  /// hint of another rank is unused, as is one for an input the model lacks).
  /// `partita run` sets them for the inputs it may fill (attention_mask,
  /// position_ids) from the token ids' shape.
  llvm::StringMap<Shape> dynamicDimHints;
  /// Accept what only Partita's own compiled programs hold, once their hash
  /// has been checked against plan.json: external data at an absolute
  /// location (the original model's file, read by reference) and slices of
  /// it (keys partita_stored_shape, partita_view_start, partita_perm).
  bool trustedLocations = false;
  /// With trustedLocations: the only absolute locations accepted (the weight
  /// files plan.json lists, checked unchanged since compile).
  std::vector<std::string> trustedFiles;
  /// With trustedLocations: the rank's coordinate on each mesh axis, which
  /// places a flat part shared by the ranks along an axis (FlatPart::byAxis;
  /// key partita_flat_block). Absent: coordinate 0 (sizing a program).
  std::map<std::string, int64_t> coordinates;
  /// How diagnostics name the option that sets input shapes.
  std::string shapeFlag = "--input-shape";
};

/// Reads binary .onnx (with or without external data) or the ONNX text syntax
/// (a file whose first non-blank character is '<'). Weights are held by
/// reference; external data is checked for presence and size, not read.
/// Errors name the file, and the node, op and opset where there is one.
llvm::Expected<std::unique_ptr<Graph>> importOnnx(llvm::StringRef path, const ImportOptions &opts);

/// A TensorProto with inline data (raw_data or typed fields) as a Tensor.
llvm::Expected<Tensor> tensorFromOnnx(const onnx::TensorProto &t);

/// Parses "ids=2x64" into (name, shape).
llvm::Error parseInputShape(llvm::StringRef spec, ImportOptions &opts);

} // namespace partita
