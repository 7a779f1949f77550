//===- OpRegistry.h - what the compiler knows about each operator ---------===//
//
// One table, keyed by qualified op name ("MatMul", "partita.Linear"), holds the
// shape/type inference rule of every supported operator, for operators the
// compiler may fold a reference evaluator over host Tensors, and the op's
// traits: the properties passes, the runtime and the exporter ask of an op
// instead of keeping their own lists of op names. Op families register
// themselves from their own files (ElementwiseOps.cpp, ShapeOps.cpp,
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

/// What an op is, as far as passes, the runtime and the exporter care. An op
/// has any combination; each names the property, never a use of it.
enum class OpTrait : uint32_t {
  None = 0,
  /// Each result element is a function of the operands' elements at the same
  /// (broadcast) index and of nothing else: arithmetic, comparisons, Where,
  /// Cast, Identity. Its per-element function is the op's evaluator.
  Elementwise = 1u << 0,
  /// The result is operand 0's elements in their order under another shape:
  /// the same bytes (Reshape, Flatten, Squeeze, Unsqueeze, Identity).
  View = 1u << 1,
  /// Float results are some of the float operands' elements, moved or copied
  /// (views, Transpose, Slice, Gather, Concat, Expand, ...): of rounded
  /// operands, already rounded.
  MovesElements = 1u << 2,
  /// Normalises each row over trailing axes (LayerNormalization).
  Normalizes = 1u << 3,
  /// Contracts an activation with a (possibly weight) operand: MatMul, Gemm,
  /// Linear, Conv, Einsum.
  Contraction = 1u << 4,
  /// Communicates with other ranks when it runs: all-reduce, all-gather,
  /// reduce-scatter, a pipeline's send and receive.
  Collective = 1u << 5,
  /// Changes a value's layout over the device mesh: Reshard and what it lowers
  /// to (the mesh collectives and the local ShardSlice).
  Reshards = 1u << 6,
  /// Reads only its operands' types, never their values (Shape, Size).
  ShapeOnly = 1u << 7,
  /// Runs even when no result is read, and is never merged with an identical
  /// node: a pipeline's Send and Recv.
  SideEffects = 1u << 8,
  /// Has no operands: a Constant or a Weight.
  Source = 1u << 9,
};
constexpr OpTrait operator|(OpTrait a, OpTrait b) {
  return static_cast<OpTrait>(static_cast<uint32_t>(a) | static_cast<uint32_t>(b));
}

/// How the ONNX exporter writes an op.
enum class OnnxForm {
  Standard, // an ONNX operator, written as it is
  Function, // a Partita op with an ONNX function body in the exported model
  Custom,   // a Partita op that stays custom: Partita's runtime implements it
  Lowered,  // never exported: a pass lowers it first (Reshard)
};

struct OpInfo {
  InferFn infer;
  EvalFn eval; // empty when the compiler never folds this op
  int minInputs = 0;
  int maxInputs = 0; // -1: variadic
  OpTrait traits = OpTrait::None;
  OnnxForm onnx = OnnxForm::Standard;

  bool has(OpTrait t) const { return (static_cast<uint32_t>(traits) & static_cast<uint32_t>(t)) != 0; }
  OpInfo &with(OpTrait t) {
    traits = traits | t;
    return *this;
  }
  OpInfo &exportedAs(OnnxForm form) {
    onnx = form;
    return *this;
  }
};

class OpRegistry {
public:
  static const OpRegistry &get();
  const OpInfo *find(llvm::StringRef qualifiedOp) const;
  /// Registers `info` under `qualifiedOp`; traits are added on the result.
  OpInfo &add(llvm::StringRef qualifiedOp, OpInfo info) { return ops_[qualifiedOp] = std::move(info); }
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

/// Whether `n`'s operator has trait `t` (an unregistered op has none).
bool hasTrait(const Node &n, OpTrait t);

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
