//===- SplitPrograms.cpp --------------------------------------------------===//
#include "compiler/ops/OpRegistry.h"
#include "passes/SplitPrograms.h"
#include "passes/Passes.h"
#include "passes/AddOptimizer.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"
#include <algorithm>

namespace partita {

static llvm::Error fail(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "split-programs: " + msg);
}

static bool isLeaf(const Node *n) { return n && hasTrait(*n, OpTrait::Source); }

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
  for (const Node *n : g.nodes())
    if (!isLeaf(n) && std::find(order.begin(), order.end(), programOf.lookup(n)) == order.end())
      order.push_back(programOf.lookup(n));
  // Forward activations the backward reads, in the order the forward makes them.
  std::vector<const Value *> saved;
  for (const Node *n : g.nodes())
    if (!isLeaf(n) && programOf.lookup(n) == forward)
      for (const Value *v : n->outputs())
        if (llvm::any_of(v->users(), [&](const Node *u) {
              return !isLeaf(u) && programOf.lookup(u) == optimizer_io::kBackward;
            }))
          saved.push_back(v);
  llvm::DenseSet<const Value *> isSaved(saved.begin(), saved.end());

  auto readBy = [&](const Value *v, const std::string &program) {
    return llvm::any_of(v->users(), [&](const Node *u) { return !isLeaf(u) && programOf.lookup(u) == program; });
  };
  ProgramSplit out;
  for (const Value *v : saved)
    out.saved.push_back(v->name());
  for (const std::string &p : order) {
    GraphCopier c(g);
    auto copyNode = [&](const Node *n) { c.copyNode(*n, kProgramAttr); };
    // Graph inputs this program reads, in the graph's order.
    auto reads = [&](const Value *v) {
      for (const Node *u : v->users())
        if (!u->isErased() && !isLeaf(u) && programOf.lookup(u) == p)
          return true;
      return false;
    };
    for (const Value *in : g.inputs())
      if (reads(in) || (p == forward && !in->hasUsers())) // an unread input stays the forward's
        c.addInput(in);
    for (const Node *n : g.nodes()) {
      if (isLeaf(n) || programOf.lookup(n) != p)
        continue;
      for (const Value *in : n->inputs()) {
        if (!in || c.copied(in))
          continue;
        const Node *def = in->definingNode();
        if (def && def->is("Constant")) {
          copyNode(def);
        } else if (def && def->is("Weight") && (p == forward || (p == optimizer_io::kStep && !readBy(in, forward)))) {
          copyNode(def); // the forward's weights; the step's own (a master copy, half-parameters)
        } else if ((def && def->is("Weight") && (p == optimizer_io::kBackward || p == optimizer_io::kStep)) ||
                   (isSaved.count(in) && p == optimizer_io::kBackward)) {
          // What the runtime binds: the forward's weights (the backward's
          // products, the step's updates) and saved activations (the backward's).
          c.addInput(in);
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
    Graph &program = c.graph();
    for (const Value *o : g.outputs()) {
      const Node *def = o->definingNode();
      std::string q = def && !isLeaf(def) ? programOf.lookup(def) : forward;
      if (q != p)
        continue;
      if (!c.copied(o)) { // a weight or constant returned as it is
        if (!def)
          return fail("graph input %" + o->name() + " is returned unchanged; no program computes it");
        copyNode(def);
      }
      program.outputs().push_back(c.lookup(o));
    }
    if (p == forward)
      for (const Value *v : saved)
        if (!g.isGraphOutput(v))
          program.outputs().push_back(c.lookup(v));
    if (auto err = program.sortTopologically())
      return fail(llvm::toString(std::move(err)));
    out.programs.push_back({p, c.take()});
  }
  return out;
}

namespace {
/// split-programs as a pass: each part is named after its program.
class SplitProgramsPass : public SplitPass {
public:
  llvm::StringRef name() const override { return "split-programs"; }
  llvm::Expected<std::vector<std::unique_ptr<Graph>>> split(const Graph &g) override {
    auto split = splitPrograms(g, separateBackward_);
    if (!split)
      return split.takeError();
    std::vector<std::unique_ptr<Graph>> parts;
    for (NamedProgram &p : split->programs) {
      p.graph->name = g.name + "." + p.name;
      parts.push_back(std::move(p.graph));
    }
    return std::move(parts);
  }

private:
  PassOption<bool> separateBackward_{this, "separate-backward", true,
                                     "the backward a program of its own (0: the forward returns the gradients)"};
};
} // namespace

PassInfo splitProgramsPass() {
  return {"split-programs", "Cut a graph into its programs (forward, backward, grad_norm, step)",
          "Each node goes to the program its `program` attribute names (autodiff tags the backward, "
          "add-optimizer the step and grad_norm), an untagged one to its first tagged input's, else to the "
          "forward. Activations the backward reads become forward outputs and backward inputs of the same name; "
          "any other value crossing programs is an error naming it. Each part is named <graph>.<program>; the "
          "passes after it run on each.",
          [] { return std::make_unique<SplitProgramsPass>(); }};
}

} // namespace partita
