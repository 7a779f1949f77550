//===- PatternMatch.h - small matchers shared by the rewrite passes -------===//
//
// Guards for rewrites read like a sentence: "Erf's only user is an Add with
// the constant 1". Constants match by value within a relative tolerance, since
// exporters print 1/sqrt(2) or sqrt(2/pi) with varying precision.
//
//===----------------------------------------------------------------------===//
#pragma once
#include "compiler/ir/Graph.h"
#include <optional>

namespace partita {

/// The ONNX functions that define partita.* ops on export use CastLike (opset 15).
constexpr int64_t kPartitaOpsMinOpset = 15;

/// Value of a one-element Constant (any rank), else nullopt.
std::optional<double> scalarConstant(const Value *v);
/// True when `v` is a one-element constant equal to `expected` within `relTol`.
bool isScalar(const Value *v, double expected, double relTol = 1e-5);
/// The node defining `v` if it is `op` (default domain), else nullptr.
Node *definedBy(const Value *v, llvm::StringRef op);
/// The single consumer of `v` when it has exactly one use and is not a graph output.
Node *singleUser(const Graph &g, const Value *v);
/// For a binary node, the operand that is not `known` (nullptr if neither is).
Value *otherOperand(const Node *n, const Value *known);
/// For a commutative binary node: when one operand is a scalar constant equal
/// to `c`, returns the other operand.
Value *operandBesideScalar(const Node *n, double c, double relTol = 1e-5);
/// The 2-D Weight a projection (partita.Linear or MatMul) multiplies by
/// (operand 1), or nullptr.
Node *projectionWeight(const Node *n);
/// True when every user of `v` is one of `allowed`.
bool onlyUsedBy(const Graph &g, const Value *v, std::initializer_list<const Node *> allowed);

} // namespace partita
