//===- Graph.cpp ----------------------------------------------------------===//
#include "compiler/ir/Graph.h"
#include "llvm/ADT/DenseMap.h"
#include <algorithm>

namespace partita {

bool Attribute::operator==(const Attribute &o) const {
  if (kind != o.kind)
    return false;
  switch (kind) {
  case Int: return i == o.i;
  case Float: return f == o.f;
  case String: return s == o.s;
  case Ints: return ints == o.ints;
  case Floats: return floats == o.floats;
  case Strings: return strings == o.strings;
  case TensorValue: return tensor.sameContent(o.tensor);
  }
  return false;
}

void Node::setInput(size_t i, Value *v) {
  Value *old = inputs_[i];
  if (old) {
    auto it = std::find(old->users_.begin(), old->users_.end(), this);
    if (it != old->users_.end())
      old->users_.erase(it);
  }
  inputs_[i] = v;
  if (v)
    v->users_.push_back(this);
}

const Attribute *Node::attr(llvm::StringRef name) const {
  auto it = attrs_.find(name.str());
  return it == attrs_.end() ? nullptr : &it->second;
}

int64_t Node::intAttr(llvm::StringRef name, int64_t dflt) const {
  const Attribute *a = attr(name);
  return a && a->kind == Attribute::Int ? a->i : dflt;
}

double Node::floatAttr(llvm::StringRef name, double dflt) const {
  const Attribute *a = attr(name);
  return a && a->kind == Attribute::Float ? a->f : dflt;
}

std::string Node::stringAttr(llvm::StringRef name, llvm::StringRef dflt) const {
  const Attribute *a = attr(name);
  return a && a->kind == Attribute::String ? a->s : dflt.str();
}

std::vector<int64_t> Node::intsAttr(llvm::StringRef name) const {
  const Attribute *a = attr(name);
  return a && a->kind == Attribute::Ints ? a->ints : std::vector<int64_t>{};
}

std::string Node::describe(int64_t opset) const {
  std::string who = name_.empty() ? (outputs_.empty() ? std::string("?") : "%" + outputs_[0]->name())
                                  : name_;
  return "'" + who + "' (" + qualifiedOp() +
         (opset > 0 ? ", opset " + std::to_string(opset) : std::string()) + ")";
}

Value *Graph::newValue(llvm::StringRef base) {
  values_.push_back(std::make_unique<Value>());
  Value *v = values_.back().get();
  v->name_ = uniqueName(base.empty() ? "v" : base);
  byName_[v->name_] = v;
  return v;
}

std::string Graph::uniqueName(llvm::StringRef base) {
  if (!byName_.count(base))
    return base.str();
  for (;;) {
    std::string candidate = (base + "_" + llvm::Twine(++nameCounter_)).str();
    if (!byName_.count(candidate))
      return candidate;
  }
}

Value *Graph::addInput(const std::string &name, TensorType type) {
  Value *v = newValue(name);
  v->type_ = std::move(type);
  inputs_.push_back(v);
  return v;
}

Node *Graph::createNode(llvm::StringRef op, llvm::ArrayRef<Value *> inputs,
                        llvm::ArrayRef<std::string> outputNames, llvm::StringRef domain,
                        llvm::StringRef nodeName) {
  nodes_.push_back(std::make_unique<Node>());
  Node *n = nodes_.back().get();
  n->op_ = op.str();
  n->domain_ = domain.str();
  n->name_ = nodeName.str();
  for (Value *v : inputs) {
    n->inputs_.push_back(v);
    if (v)
      v->users_.push_back(n);
  }
  for (size_t i = 0; i < outputNames.size(); ++i) {
    Value *v = newValue(outputNames[i]);
    v->def_ = n;
    v->resultIndex_ = static_cast<unsigned>(i);
    n->outputs_.push_back(v);
  }
  return n;
}

Value *Graph::createConstant(const Tensor &t, llvm::StringRef nameHint) {
  Node *n = createNode("Constant", {}, {nameHint.str()});
  n->setAttr("value", Attribute::ofTensor(t));
  n->output()->type_ = t.type();
  return n->output();
}

Value *Graph::createShapeConstant(const Shape &shape, llvm::StringRef nameHint) {
  int64_t rank = static_cast<int64_t>(shape.size());
  return createConstant(Tensor::fromInts(DType::I64, {rank}, std::vector<int64_t>(shape.begin(), shape.end())),
                        nameHint);
}

void Graph::eraseNode(Node *n) {
  for (size_t i = 0; i < n->inputs_.size(); ++i)
    if (n->inputs_[i])
      n->setInput(i, nullptr);
  for (Value *v : n->outputs_)
    byName_.erase(v->name_);
  n->erased_ = true;
}

void Graph::replaceGraphOutput(Value *from, Value *to) {
  for (Value *&o : outputs_)
    if (o == from)
      o = to;
  std::swap(from->name_, to->name_);
  byName_[from->name_] = from;
  byName_[to->name_] = to;
}

bool Graph::isGraphOutput(const Value *v) const {
  return std::find(outputs_.begin(), outputs_.end(), v) != outputs_.end();
}

bool Graph::isGraphInput(const Value *v) const {
  return std::find(inputs_.begin(), inputs_.end(), v) != inputs_.end();
}

void Graph::replaceAllUsesWith(Value *from, Value *to, bool takeName) {
  bool rename = takeName && from != to && !isGraphInput(to) && !isGraphOutput(to);
  if (rename) {
    std::swap(from->name_, to->name_);
    byName_[from->name_] = from;
    byName_[to->name_] = to;
  }
  std::vector<Node *> users = from->users_;
  for (Node *u : users)
    for (size_t i = 0; i < u->inputs_.size(); ++i)
      if (u->inputs_[i] == from)
        u->setInput(i, to);
  for (Value *&o : outputs_)
    if (o == from)
      o = to;
}

Node *Graph::cloneNode(const Node &n, llvm::ArrayRef<Value *> inputs, llvm::StringRef suffix) {
  std::vector<std::string> outs;
  for (const Value *o : n.outputs())
    outs.push_back(o->name() + suffix.str());
  Node *c = createNode(n.op(), inputs, outs, n.domain(), n.name() + suffix.str());
  for (const auto &[k, a] : n.attrs())
    c->setAttr(k, a);
  for (size_t i = 0; i < n.numOutputs(); ++i) {
    c->output(i)->type() = n.output(i)->type();
    c->output(i)->sharding() = n.output(i)->sharding();
  }
  return c;
}

void Graph::renameValue(Value *v, llvm::StringRef base) {
  byName_.erase(v->name_);
  v->name_ = uniqueName(base);
  byName_[v->name_] = v;
}

std::vector<Node *> Graph::nodes() const {
  std::vector<Node *> out;
  out.reserve(nodes_.size());
  for (const auto &n : nodes_)
    if (!n->erased_)
      out.push_back(n.get());
  return out;
}

std::vector<Node *> Graph::nodesCreatedSince(size_t mark) const {
  std::vector<Node *> out;
  for (size_t i = mark; i < nodes_.size(); ++i)
    if (!nodes_[i]->erased_)
      out.push_back(nodes_[i].get());
  return out;
}

size_t Graph::numNodes() const {
  size_t n = 0;
  for (const auto &node : nodes_)
    n += !node->erased_;
  return n;
}

llvm::Error Graph::sortTopologically() {
  std::vector<std::unique_ptr<Node>> live;
  std::vector<bool> created; // since the order was chosen
  for (size_t i = 0; i < nodes_.size(); ++i)
    if (!nodes_[i]->erased_) {
      live.push_back(std::move(nodes_[i]));
      created.push_back(i >= ordered_);
    }
  llvm::DenseMap<Node *, size_t> index;
  for (size_t i = 0; i < live.size(); ++i)
    index[live[i].get()] = i;
  std::vector<unsigned> pending(live.size(), 0);
  std::vector<std::vector<size_t>> consumers(live.size());
  for (size_t i = 0; i < live.size(); ++i)
    for (Value *v : live[i]->inputs_)
      if (v && v->def_) {
        auto it = index.find(v->def_);
        if (it == index.end())
          continue;
        ++pending[i];
        consumers[it->second].push_back(i);
      }
  // Kahn's algorithm taking, among ready nodes, the one of least `key`.
  auto kahn = [&](const std::vector<size_t> &key) {
    std::vector<unsigned> left = pending;
    auto later = [&](size_t a, size_t b) { return std::make_pair(key[a], a) > std::make_pair(key[b], b); };
    std::vector<size_t> order, ready;
    for (size_t i = 0; i < live.size(); ++i)
      if (!left[i])
        ready.push_back(i);
    std::make_heap(ready.begin(), ready.end(), later);
    while (!ready.empty()) {
      std::pop_heap(ready.begin(), ready.end(), later);
      size_t i = ready.back();
      ready.pop_back();
      order.push_back(i);
      for (size_t c : consumers[i])
        if (--left[c] == 0) {
          ready.push_back(c);
          std::push_heap(ready.begin(), ready.end(), later);
        }
    }
    return order;
  };
  // A node's key is its position, or its first consumer's key when that is
  // earlier: a node inserted out of order (appended last, say) runs right
  // before the first node that needs it, instead of holding that node back
  // while every ready node after it is hoisted above it. A node no other
  // node reads (a graph output: a gradient's all-reduce, say) runs as soon as
  // its operands are made, so what it reads dies early and a collective
  // starts while the rest computes.
  std::vector<size_t> key(live.size());
  for (size_t i = 0; i < live.size(); ++i)
    key[i] = i;
  std::vector<size_t> order = kahn(key);
  for (auto it = order.rbegin(); it != order.rend(); ++it)
    for (size_t c : consumers[*it])
      key[*it] = std::min(key[*it], key[c]);
  for (size_t i : order) {
    if (!consumers[i].empty() || !created[i])
      continue;
    size_t last = 0;
    bool made = false;
    for (Value *v : live[i]->inputs_)
      if (v && v->def_)
        if (auto it = index.find(v->def_); it != index.end()) {
          last = std::max(last, key[it->second]);
          made = true;
        }
    if (made)
      key[i] = std::min(key[i], last);
  }
  if (order.size() == live.size())
    order = kahn(key);
  if (order.size() != live.size()) {
    std::vector<bool> sorted(live.size(), false);
    for (size_t i : order)
      sorted[i] = true;
    size_t stuck = std::find(sorted.begin(), sorted.end(), false) - sorted.begin();
    std::string who = live[stuck]->describe();
    nodes_ = std::move(live);
    ordered_ = std::min(ordered_, nodes_.size()); // erased nodes were dropped
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "graph has a cycle through node " + who);
  }
  nodes_.clear();
  for (size_t i : order)
    nodes_.push_back(std::move(live[i]));
  ordered_ = nodes_.size();
  return llvm::Error::success();
}

void Graph::setOrder(const std::vector<Node *> &order) {
  llvm::DenseMap<Node *, size_t> rank;
  for (size_t i = 0; i < order.size(); ++i)
    rank[order[i]] = i;
  std::vector<std::unique_ptr<Node>> live;
  for (auto &n : nodes_)
    if (!n->erased_)
      live.push_back(std::move(n));
  std::sort(live.begin(), live.end(), [&](const auto &a, const auto &b) {
    return rank.lookup(a.get()) < rank.lookup(b.get());
  });
  nodes_ = std::move(live);
  ordered_ = nodes_.size();
}

Value *Graph::findValue(llvm::StringRef name) const {
  auto it = byName_.find(name);
  return it == byName_.end() ? nullptr : it->second;
}

Value *getOrCreateWeight(Graph &g, const std::string &name, const WeightRef &ref) {
  Value *v = g.findValue(name);
  if (v && v->definingNode() && v->definingNode()->is("Weight") && v->definingNode()->stringAttr("name", "") == name)
    return v;
  g.weights.add(name, ref);
  Node *n = g.createNode("Weight", {}, {name});
  n->setAttr("name", Attribute::ofString(name));
  n->output()->type() = ref.heldType();
  return n->output();
}

GraphCopier::GraphCopier(const Graph &from) : to_(std::make_unique<Graph>()) {
  to_->name = from.name;
  to_->opset = from.opset;
  to_->mesh = from.mesh;
  to_->weights = from.weights;
  to_->coverage = from.coverage;
}

Value *GraphCopier::addInput(const Value *v) {
  Value *in = to_->addInput(v->name(), v->type());
  in->sharding() = v->sharding();
  return map_[v] = in;
}

Node *GraphCopier::copyNode(const Node &n, llvm::StringRef skipAttr) {
  std::vector<Value *> ins;
  for (const Value *in : n.inputs())
    ins.push_back(in ? map_.lookup(in) : nullptr);
  std::vector<std::string> outs;
  for (const Value *out : n.outputs())
    outs.push_back(out->name());
  Node *m = to_->createNode(n.op(), ins, outs, n.domain(), n.name());
  to_->keepOrder(); // a copy keeps the source's order
  for (const auto &[k, a] : n.attrs())
    if (k != skipAttr)
      m->setAttr(k, a);
  for (size_t i = 0; i < n.numOutputs(); ++i) {
    m->output(i)->type() = n.output(i)->type();
    m->output(i)->sharding() = n.output(i)->sharding();
    map_[n.output(i)] = m->output(i);
  }
  return m;
}

std::unique_ptr<Graph> cloneGraph(const Graph &g) {
  GraphCopier c(g);
  for (const Value *in : g.inputs())
    c.addInput(in);
  for (const Node *n : g.nodes())
    c.copyNode(*n);
  for (const Value *out : g.outputs())
    c.graph().outputs().push_back(c.lookup(out));
  return c.take();
}

const Tensor *constantValue(const Value *v) {
  if (!v || !v->definingNode() || !v->definingNode()->is("Constant"))
    return nullptr;
  const Attribute *a = v->definingNode()->attr("value");
  return a && a->kind == Attribute::TensorValue ? &a->tensor : nullptr;
}

} // namespace partita
