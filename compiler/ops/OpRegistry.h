//===- OpRegistry.h - what the compiler knows about each operator ---------===//
//
// One table, keyed by qualified op name ("MatMul", "partita.Linear"), holds the
// shape/type inference rule of every supported operator and, for operators the
// compiler may fold, a reference evaluator over host Tensors. Op families
// register themselves from their own files (ElementwiseOps.cpp, ShapeOps.cpp,
// ReductionOps.cpp, NNOps.cpp).
//
//===----------------------------------------------------------------------===//
#pragma once
#include "compiler/ir/Graph.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Error.h"
#include <functional>

namespace partita {

/// What inference sees of one node: input types, and input values where they
/// are known constants (folded shape computations), nullptr otherwise.
struct InferContext {
  const Node &node;
  std::vector<const TensorType *> types;
  std::vector<const Tensor *> values;
  int64_t opset;

  /// An omitted input (`none`) reads as an empty, unknown type: rules that
  /// require the input then reject it instead of reading through null.
  const TensorType &type(size_t i) const {
    static const TensorType kOmitted{};
    return types[i] ? *types[i] : kOmitted;
  }
  bool has(size_t i) const { return i < types.size() && types[i] != nullptr; }
  const Tensor *value(size_t i) const { return i < values.size() ? values[i] : nullptr; }
  /// An error naming the node: "node '/h.0/Add' (Add): msg".
  llvm::Error error(const llvm::Twine &msg) const;
};

using InferFn = std::function<llvm::Error(const InferContext &, std::vector<TensorType> &)>;
using EvalFn =
    std::function<llvm::Expected<std::vector<Tensor>>(const Node &, llvm::ArrayRef<Tensor>)>;

struct OpInfo {
  InferFn infer;
  EvalFn eval; // empty when the compiler never folds this op
  int minInputs = 0;
  int maxInputs = 0; // -1: variadic
};

class OpRegistry {
public:
  static const OpRegistry &get();
  const OpInfo *find(llvm::StringRef qualifiedOp) const;
  void add(llvm::StringRef qualifiedOp, OpInfo info) { ops_[qualifiedOp] = std::move(info); }
  std::vector<std::string> names() const;

private:
  llvm::StringMap<OpInfo> ops_;
};

void registerElementwiseOps(OpRegistry &r);
void registerShapeOps(OpRegistry &r);
void registerReductionOps(OpRegistry &r);
void registerNNOps(OpRegistry &r);
void registerCommOps(OpRegistry &r);
void registerEinsumOp(OpRegistry &r);
void registerConvOp(OpRegistry &r);
void registerOptimizerOps(OpRegistry &r);
void registerEmbeddingGradOp(OpRegistry &r);
void registerFlatShardsOps(OpRegistry &r);

/// Runs inference for `n` given its inputs' types and known values; writes the
/// result types into its outputs. Unknown op, arity or shape errors name the node.
llvm::Error inferNode(Node &n, int64_t opset,
                      const std::function<const Tensor *(const Value *)> &knownValue);
/// Evaluates `n` on constant inputs (fails when the op has no evaluator).
llvm::Expected<std::vector<Tensor>> evaluateNode(const Node &n, llvm::ArrayRef<Tensor> inputs);

/// Normalises a possibly negative axis against `rank`; -1 when out of range.
int64_t normalizeAxis(int64_t axis, int64_t rank);
/// A Transpose node's permutation (ONNX default: its input's dims reversed).
std::vector<int64_t> transposePerm(const Node &n);

} // namespace partita
