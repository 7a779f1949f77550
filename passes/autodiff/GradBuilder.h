//===- GradBuilder.h - building backward nodes with inferred types --------===//
#pragma once
#include "compiler/ir/Graph.h"
#include "llvm/Support/Error.h"
#include <functional>
#include <map>

namespace partita {

class GradBuilder {
public:
  GradBuilder(Graph &g, std::string prefix) : g_(g), prefix_(std::move(prefix)) {}

  /// A node with one result whose type is inferred (failures are kept and
  /// reported by error()).
  Value *op(llvm::StringRef op, llvm::ArrayRef<Value *> inputs, const std::map<std::string, Attribute> &attrs = {},
            llvm::StringRef domain = "");
  Value *scalar(double v, DType t);
  Value *ints(llvm::ArrayRef<int64_t> v);
  Value *zeros(const TensorType &t);
  /// Sums `grad` over the dims it was broadcast along so it gets `target`'s shape.
  Value *sumTo(Value *grad, const Shape &target);
  /// Swaps the last two dims.
  Value *transposeLast(Value *v);
  Value *reshape(Value *v, const Shape &shape);

  llvm::Error takeError() {
    return error_.empty() ? llvm::Error::success()
                          : llvm::createStringError(llvm::inconvertibleErrorCode(), error_);
  }
  Graph &graph() { return g_; }

private:
  Graph &g_;
  std::string prefix_;
  std::string error_;
  int counter_ = 0;
};

/// dIn[i] (nullptr: no gradient) from dOut[j] (nullptr: none flows) for one node.
using GradFn = std::function<llvm::Error(GradBuilder &, const Node &, llvm::ArrayRef<Value *> dOut,
                                         std::vector<Value *> &dIn)>;

const GradFn *findGradRule(const Node &n);

void addElementwiseGrads(std::map<std::string, GradFn> &t);
void addLinearAlgebraGrads(std::map<std::string, GradFn> &t);
void addNormGrads(std::map<std::string, GradFn> &t);
void addShapeGrads(std::map<std::string, GradFn> &t);

} // namespace partita
