//===- Printer.h - text form of the IR ------------------------------------===//
//
//   graph @mlp(%x: f32[8,512] {R,R}) opset 17 mesh<tp=2> {
//     %w = Weight() {name = "fc.w"} : f32[512,2048] {R,S(tp)}
//     %h = MatMul(%x, %w) : f32[8,2048] {R,S(tp)} loc("/fc/MatMul")
//     return %h
//   }
//
// print -> parse -> print is the identity; lit tests rely on it.
//===----------------------------------------------------------------------===//
#pragma once
#include "compiler/ir/Graph.h"
#include "llvm/Support/raw_ostream.h"

namespace partita {

struct PrintOptions {
  /// Print values as %0, %1, ... and weights as "w0", "w1", ... in program
  /// order, without locations: two graphs that differ only in the names an
  /// exporter chose print identically (the dynamic- vs static-batch check).
  bool genericNames = false;
  /// Tensors (Constant values) of more elements than this print as
  /// `dense<f32[2048,2048]>[...]` (0: every element). Text for people, such
  /// as the .pir files beside compiled programs whose .onnx holds the data:
  /// the parser does not read an elided tensor back.
  int64_t elideTensorsOver = 0;
};

void printGraph(const Graph &g, llvm::raw_ostream &os, const PrintOptions &opts = {});
std::string printValueRef(const Value *v); // "%name" or "%\"odd name\""
std::string formatFloat(double v);         // shortest text that re-reads as the same f32

} // namespace partita
