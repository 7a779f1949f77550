//===- SplitPrograms.cpp --------------------------------------------------===//
#include "passes/SplitPrograms.h"
#include "passes/AddOptimizer.h"
#include "llvm/ADT/DenseMap.h"
#include <map>

namespace partita {

static llvm::Error fail(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "split-programs: " + msg);
}

static bool isLeaf(const Node *n) { return n && (n->is("Constant") || n->is("Weight")); }

llvm::Expected<std::vector<NamedProgram>> splitPrograms(const Graph &g) {
  const std::string forward = "forward";
  std::vector<std::string> order{forward};
  llvm::DenseMap<const Node *, std::string> programOf;
  for (const Node *n : g.nodes()) {
    if (isLeaf(n))
      continue;
    std::string p = n->stringAttr(optimizer_io::kProgramAttr, "");
    for (size_t i = 0; i < n->numInputs() && p.empty(); ++i)
      if (const Value *in = n->input(i); in && in->definingNode() && !isLeaf(in->definingNode()))
        if (const std::string &q = programOf.lookup(in->definingNode()); q != forward)
          p = q;
    if (p.empty())
      p = forward;
    if (std::find(order.begin(), order.end(), p) == order.end())
      order.push_back(p);
    programOf[n] = p;
  }

  std::vector<NamedProgram> out;
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
        } else if (def && def->is("Weight")) {
          if (p == forward) {
            copyNode(def);
          } else {
            Value *v = c->addInput(in->name(), in->type());
            copyInfo(in, v);
            map[in] = v;
          }
        } else {
          return fail("value %" + in->name() + " is computed in program '" + programOf.lookup(def) +
                      "' and read by node " + n->describe() + " of program '" + p +
                      "': programs meet only through graph inputs, outputs and weights");
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
    if (auto err = c->sortTopologically())
      return fail(llvm::toString(std::move(err)));
    out.push_back({p, std::move(c)});
  }
  return out;
}

} // namespace partita
