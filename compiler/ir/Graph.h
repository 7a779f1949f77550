//===- Graph.h - Partita's IR: Graph, Node, Value, Attribute --------------===//
//
// A Graph is an SSA program over tensors: Values are defined once (by a graph
// input or a Node) and carry a TensorType and an optional Sharding. Nodes are
// ONNX-like operators (domain, op type, attributes). Weights are `Weight` nodes
// whose bytes stay in the WeightStore until asked for; `Constant` nodes hold
// small tensors inline.
//
//===----------------------------------------------------------------------===//
#pragma once
#include "compiler/ir/Sharding.h"
#include "llvm/ADT/DenseMap.h"
#include "compiler/ir/Tensor.h"
#include "compiler/ir/WeightStore.h"
#include "llvm/ADT/StringMap.h"
#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace partita {

class Node;

struct Attribute {
  enum Kind { Int, Float, String, Ints, Floats, Strings, TensorValue };
  Kind kind = Int;
  int64_t i = 0;
  double f = 0;
  std::string s;
  std::vector<int64_t> ints;
  std::vector<double> floats;
  std::vector<std::string> strings;
  Tensor tensor;

  static Attribute ofInt(int64_t v) { Attribute a; a.kind = Int; a.i = v; return a; }
  static Attribute ofFloat(double v) { Attribute a; a.kind = Float; a.f = v; return a; }
  static Attribute ofString(std::string v) { Attribute a; a.kind = String; a.s = std::move(v); return a; }
  static Attribute ofInts(std::vector<int64_t> v) { Attribute a; a.kind = Ints; a.ints = std::move(v); return a; }
  static Attribute ofFloats(std::vector<double> v) { Attribute a; a.kind = Floats; a.floats = std::move(v); return a; }
  static Attribute ofTensor(Tensor t) { Attribute a; a.kind = TensorValue; a.tensor = std::move(t); return a; }
  bool operator==(const Attribute &o) const;
};

class Value {
public:
  const std::string &name() const { return name_; }
  TensorType &type() { return type_; }
  const TensorType &type() const { return type_; }
  std::optional<Sharding> &sharding() { return sharding_; }
  const std::optional<Sharding> &sharding() const { return sharding_; }
  Node *definingNode() const { return def_; }
  unsigned resultIndex() const { return resultIndex_; }
  /// Consumers, one entry per operand use (a node using the value twice appears twice).
  const std::vector<Node *> &users() const { return users_; }
  bool hasUsers() const { return !users_.empty(); }

private:
  friend class Graph;
  friend class Node;
  std::string name_;
  TensorType type_;
  std::optional<Sharding> sharding_;
  Node *def_ = nullptr;
  unsigned resultIndex_ = 0;
  std::vector<Node *> users_;
};

/// The node attribute naming the program a node belongs to (autodiff and
/// add-optimizer set it, split-programs reads it). IR only: the ONNX export
/// leaves it out.
inline constexpr const char *kProgramAttr = "program";
/// The node attribute naming the pipeline stage a node runs on (assign-stages
/// sets it on the forward, autodiff carries it to each node's backward,
/// split-pipeline reads it). IR only, like kProgramAttr.
inline constexpr const char *kStageAttr = "stage";

class Node {
public:
  const std::string &op() const { return op_; }
  const std::string &domain() const { return domain_; }
  /// "Op" for the default ONNX domain, "domain.Op" otherwise.
  std::string qualifiedOp() const { return domain_.empty() ? op_ : domain_ + "." + op_; }
  bool is(llvm::StringRef op, llvm::StringRef domain = "") const {
    return op_ == op && domain_ == domain;
  }
  const std::string &name() const { return name_; }
  void setName(std::string n) { name_ = std::move(n); }

  size_t numInputs() const { return inputs_.size(); }
  /// nullptr for an omitted optional input.
  Value *input(size_t i) const { return i < inputs_.size() ? inputs_[i] : nullptr; }
  const std::vector<Value *> &inputs() const { return inputs_; }
  void setInput(size_t i, Value *v);
  size_t numOutputs() const { return outputs_.size(); }
  Value *output(size_t i = 0) const { return outputs_[i]; }
  const std::vector<Value *> &outputs() const { return outputs_; }

  const std::map<std::string, Attribute> &attrs() const { return attrs_; }
  const Attribute *attr(llvm::StringRef name) const;
  int64_t intAttr(llvm::StringRef name, int64_t dflt) const;
  double floatAttr(llvm::StringRef name, double dflt) const;
  std::string stringAttr(llvm::StringRef name, llvm::StringRef dflt) const;
  std::vector<int64_t> intsAttr(llvm::StringRef name) const;
  bool hasAttr(llvm::StringRef name) const { return attr(name) != nullptr; }
  void setAttr(const std::string &name, Attribute a) { attrs_[name] = std::move(a); }
  void removeAttr(const std::string &name) { attrs_.erase(name); }

  bool isErased() const { return erased_; }
  /// "'/h.0/attn/MatMul' (MatMul)", or "(MatMul, opset 17)" given an opset.
  std::string describe(int64_t opset = 0) const;

private:
  friend class Graph;
  std::string op_, domain_, name_;
  std::vector<Value *> inputs_;
  std::vector<Value *> outputs_;
  std::map<std::string, Attribute> attrs_;
  bool erased_ = false;
};

class Graph {
public:
  Graph() = default;
  Graph(const Graph &) = delete;
  Graph &operator=(const Graph &) = delete;

  std::string name = "main";
  int64_t opset = 17;
  Mesh mesh;
  WeightStore weights;
  /// What the sharding passes decided per transformer block, for reports
  /// (`partita inspect`, plan.json). Not part of the text form.
  std::vector<std::string> coverage;

  /// Raises the opset when a rewrite introduces an op from a newer one
  /// (LayerNormalization: 17). Opsets 13-17 agree on every op Partita reads.
  void requireOpset(int64_t v) { opset = std::max(opset, v); }

  Value *addInput(const std::string &name, TensorType type);
  const std::vector<Value *> &inputs() const { return inputs_; }
  std::vector<Value *> &outputs() { return outputs_; }
  const std::vector<Value *> &outputs() const { return outputs_; }

  /// Appends a node with fresh result values named after `outputNames`
  /// (made unique). Call sortTopologically() after inserting out of order.
  Node *createNode(llvm::StringRef op, llvm::ArrayRef<Value *> inputs,
                   llvm::ArrayRef<std::string> outputNames, llvm::StringRef domain = "",
                   llvm::StringRef nodeName = "");
  /// A copy of node `n` (op, attributes, result types and shardings) reading
  /// `inputs`, its results and itself named as `n`'s plus `suffix`.
  Node *cloneNode(const Node &n, llvm::ArrayRef<Value *> inputs, llvm::StringRef suffix);
  /// Constant node holding `t`; returns its value.
  Value *createConstant(const Tensor &t, llvm::StringRef nameHint);
  /// An i64[rank] constant holding `shape` (a Reshape or Expand target).
  Value *createShapeConstant(const Shape &shape, llvm::StringRef nameHint);

  /// Marks the node erased and drops its uses; its results must be unused.
  void eraseNode(Node *n);
  /// Redirects every use of `from` (graph outputs included) to `to`. With
  /// `takeName`, `to` takes over `from`'s name (unless `to` is a graph input or
  /// output), so rewrites keep value and graph output names stable.
  void replaceAllUsesWith(Value *from, Value *to, bool takeName = false);
  /// Makes `to` the graph output in place of `from` (other uses of `from`
  /// stay), and gives `to` the output's name.
  void replaceGraphOutput(Value *from, Value *to);
  bool isGraphOutput(const Value *v) const;
  /// Gives `v` a fresh name made from `base`; its old name becomes free.
  void renameValue(Value *v, llvm::StringRef base);
  bool isGraphInput(const Value *v) const;

  /// Live nodes in program order.
  std::vector<Node *> nodes() const;
  /// A mark for nodesCreatedSince: how many nodes were created (valid until
  /// the next sort, which drops erased ones).
  size_t creationMark() const { return nodes_.size(); }
  /// The live nodes created after `mark` (creationMark), in creation order.
  std::vector<Node *> nodesCreatedSince(size_t mark) const;
  size_t numNodes() const;
  /// Drops erased nodes and orders the rest so producers precede consumers,
  /// keeping the order the nodes have where it allows. A node created since
  /// the order was last chosen (a sort, setOrder, keepOrder) runs right
  /// before the first node that reads it, or, read by none (a graph output),
  /// as soon as its operands are made. Fails (naming a node) when the graph
  /// has a cycle.
  llvm::Error sortTopologically();
  /// Takes the present order of the nodes as chosen (a parsed or imported
  /// file's, a copy's): sortTopologically moves only nodes created later.
  void keepOrder() { ordered_ = nodes_.size(); }

  /// Reorders the live nodes; `order` must be a topological order of all of them.
  void setOrder(const std::vector<Node *> &order);

  Value *findValue(llvm::StringRef name) const;
  std::string uniqueName(llvm::StringRef base);

private:
  Value *newValue(llvm::StringRef name);
  std::vector<std::unique_ptr<Value>> values_;
  std::vector<std::unique_ptr<Node>> nodes_;
  size_t ordered_ = 0; // nodes_[0, ordered_) are in a chosen order; later ones were created since
  std::vector<Value *> inputs_;
  std::vector<Value *> outputs_;
  llvm::StringMap<Value *> byName_;
  uint64_t nameCounter_ = 0;
};

/// The value of the Weight node for stored weight `name`: the existing one, or
/// a new node declared with `ref` (so a weight shared by several users, or a
/// view of it, stays one value and one initializer).
Value *getOrCreateWeight(Graph &g, const std::string &name, const WeightRef &ref);

/// A deep copy (values, nodes, shardings, weights by reference).
std::unique_ptr<Graph> cloneGraph(const Graph &g);

/// A graph with `g`'s name, opset, mesh, weights and coverage and nothing
/// else, and a copier of `g`'s values and nodes into it (cloneGraph; the
/// programs split-programs cuts out of one graph).
class GraphCopier {
public:
  explicit GraphCopier(const Graph &from);
  /// A graph input of `v`'s name, type and sharding standing for `v`.
  Value *addInput(const Value *v);
  /// A copy of `n` reading the copies of its inputs; attributes `skipAttr`
  /// names are left out.
  Node *copyNode(const Node &n, llvm::StringRef skipAttr = "");
  /// `to` (of the new graph) stands for `v` from now on.
  void map(const Value *v, Value *to) { map_[v] = to; }
  /// The copy of `v`, or nullptr.
  Value *lookup(const Value *v) const { return map_.lookup(v); }
  bool copied(const Value *v) const { return map_.count(v) != 0; }
  Graph &graph() { return *to_; }
  std::unique_ptr<Graph> take() { return std::move(to_); }

private:
  std::unique_ptr<Graph> to_;
  llvm::DenseMap<const Value *, Value *> map_;
};

/// Returns the constant tensor a value holds (Constant node), or nullptr.
const Tensor *constantValue(const Value *v);

} // namespace partita
