//===- SplitPrograms.cpp --------------------------------------------------===//
#include "passes/SplitPrograms.h"
#include "passes/AddOptimizer.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include <algorithm>
#include <map>

namespace partita {

static llvm::Error fail(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "split-programs: " + msg);
}

static bool isLeaf(const Node *n) { return n && (n->is("Constant") || n->is("Weight")); }

llvm::DenseMap<const Node *, std::string> assignPrograms(const Graph &g, bool separateBackward) {
  llvm::DenseMap<const Node *, std::string> programOf;
  for (const Node *n : g.nodes()) {
    if (isLeaf(n))
      continue;
    std::string p = n->stringAttr(optimizer_io::kProgramAttr, "");
    if (p == optimizer_io::kBackward && !separateBackward)
      p.clear();
    for (size_t i = 0; i < n->numInputs() && p.empty(); ++i)
      if (const Value *in = n->input(i); in && in->definingNode() && !isLeaf(in->definingNode()))
        if (const std::string &q = programOf.lookup(in->definingNode()); q != kForwardProgram)
          p = q;
    programOf[n] = p.empty() ? kForwardProgram : p;
  }
  return programOf;
}

llvm::Expected<ProgramSplit> splitPrograms(const Graph &g, bool separateBackward) {
  const std::string forward = kForwardProgram;
  llvm::DenseMap<const Node *, std::string> programOf = assignPrograms(g, separateBackward);
  std::vector<std::string> order{forward};
  llvm::DenseMap<const Node *, size_t> position;
  for (const Node *n : g.nodes()) {
    position[n] = position.size();
    if (!isLeaf(n) && std::find(order.begin(), order.end(), programOf.lookup(n)) == order.end())
      order.push_back(programOf.lookup(n));
  }
  // Forward activations the backward reads.
  std::vector<const Value *> saved;
  llvm::DenseSet<const Value *> isSaved;
  for (const Node *n : g.nodes())
    if (!isLeaf(n) && programOf.lookup(n) == optimizer_io::kBackward)
      for (const Value *in : n->inputs())
        if (in && in->definingNode() && !isLeaf(in->definingNode()) &&
            programOf.lookup(in->definingNode()) == forward && isSaved.insert(in).second)
          saved.push_back(in);
  std::sort(saved.begin(), saved.end(), [&](const Value *a, const Value *b) {
    return std::make_pair(position.lookup(a->definingNode()), a->resultIndex()) <
           std::make_pair(position.lookup(b->definingNode()), b->resultIndex());
  });

  ProgramSplit out;
  for (const Value *v : saved)
    out.saved.push_back(v->name());
  for (const std::string &p : order) {
    auto c = std::make_unique<Graph>();
    c->name = g.name;
    c->opset = g.opset;
    c->mesh = g.mesh;
    c->weights = g.weights;
    c->coverage = g.coverage;
    llvm::DenseMap<const Value *, Value *> map;
    auto copyInfo = [](const Value *from, Value *to) {
      to->type() = from->type();
      to->sharding() = from->sharding();
    };
    auto copyNode = [&](const Node *n) {
      std::vector<Value *> ins;
      for (const Value *in : n->inputs())
        ins.push_back(in ? map.lookup(in) : nullptr);
      std::vector<std::string> names;
      for (const Value *o : n->outputs())
        names.push_back(o->name());
      Node *m = c->createNode(n->op(), ins, names, n->domain(), n->name());
      for (const auto &[k, a] : n->attrs())
        if (k != optimizer_io::kProgramAttr)
          m->setAttr(k, a);
      for (size_t i = 0; i < n->numOutputs(); ++i) {
        copyInfo(n->output(i), m->output(i));
        map[n->output(i)] = m->output(i);
      }
    };
    // Graph inputs this program reads, in the graph's order.
    auto reads = [&](const Value *v) {
      for (const Node *u : v->users())
        if (!u->isErased() && !isLeaf(u) && programOf.lookup(u) == p)
          return true;
      return false;
    };
    for (const Value *in : g.inputs())
      if (reads(in) || (p == forward && !in->hasUsers())) { // an unread input stays the forward's
        Value *v = c->addInput(in->name(), in->type());
        copyInfo(in, v);
        map[in] = v;
      }
    for (const Node *n : g.nodes()) {
      if (isLeaf(n) || programOf.lookup(n) != p)
        continue;
      for (const Value *in : n->inputs()) {
        if (!in || map.count(in))
          continue;
        const Node *def = in->definingNode();
        if (def && def->is("Constant")) {
          copyNode(def);
        } else if (def && def->is("Weight") && p == forward) {
          copyNode(def);
        } else if ((def && def->is("Weight") && (p == optimizer_io::kBackward || p == optimizer_io::kStep)) ||
                   (isSaved.count(in) && p == optimizer_io::kBackward)) {
          // What the runtime binds: the forward's weights (the backward's
          // products, the step's updates) and saved activations (the backward's).
          Value *v = c->addInput(in->name(), in->type());
          copyInfo(in, v);
          map[in] = v;
        } else {
          std::string from = def && def->is("Weight") ? "a weight of program 'forward'"
                                                      : "computed in program '" + programOf.lookup(def) + "'";
          return fail("value %" + in->name() + " is " + from + " and read by node " + n->describe() +
                      " of program '" + p + "': programs meet only through graph inputs and outputs, the "
                      "forward's weights (read by the backward and the step) and its saved activations (read "
                      "by the backward)");
        }
      }
      copyNode(n);
    }
    for (const Value *o : g.outputs()) {
      const Node *def = o->definingNode();
      std::string q = def && !isLeaf(def) ? programOf.lookup(def) : forward;
      if (q != p)
        continue;
      if (!map.count(o)) { // a weight or constant returned as it is
        if (!def)
          return fail("graph input %" + o->name() + " is returned unchanged; no program computes it");
        copyNode(def);
      }
      c->outputs().push_back(map.lookup(o));
    }
    if (p == forward)
      for (const Value *v : saved)
        if (!g.isGraphOutput(v))
          c->outputs().push_back(map.lookup(v));
    if (auto err = c->sortTopologically())
      return fail(llvm::toString(std::move(err)));
    out.programs.push_back({p, std::move(c)});
  }
  return out;
}

} // namespace partita
