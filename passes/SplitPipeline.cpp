//===- SplitPipeline.cpp --------------------------------------------------===//
#include "compiler/ops/OpRegistry.h"
#include "passes/SplitPipeline.h"
#include "passes/Passes.h"
#include <cstring>
#include "compiler/plan/Plan.h"
#include "passes/AddOptimizer.h"
#include "passes/SplitPrograms.h"
#include "passes/sharding/ReshardPlanner.h"
#include <optional>
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringExtras.h"
#include <algorithm>
#include <set>

namespace partita {

namespace {

llvm::Error fail(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "split-pipeline: " + msg);
}

bool isLeaf(const Node *n) { return n && hasTrait(*n, OpTrait::Source); }

constexpr int64_t kReplicated = -1; // computed from inputs alone: on every stage that reads it

/// Puts `n` in the program of `of` (its kProgramAttr; none: the forward).
void inProgramOf(const Node &of, Node *n) {
  if (const Attribute *program = of.attr(kProgramAttr))
    n->setAttr(kProgramAttr, *program);
}

/// A value every tp rank holds whole (the residual stream without sequence
/// parallelism) goes between stages as each tp rank's 1/tp of its last
/// dimension that divides (Megatron's scatter-gather): the layout to send,
/// or none (no tp, already split over tp, a partial sum, nothing divides).
std::optional<Sharding> scatterOverTp(const Graph &g, const Value &v) {
  const MeshAxis *tp = g.mesh.find(mesh_axis::kTensor);
  if (!tp || tp->size < 2 || v.type().rank() == 0)
    return std::nullopt;
  Sharding s = v.sharding() ? *v.sharding() : Sharding::replicated(v.type().rank());
  if (!s.partial.empty())
    return std::nullopt;
  for (const auto &axes : s.dims)
    if (llvm::is_contained(axes, std::string(mesh_axis::kTensor)))
      return std::nullopt;
  for (size_t d = s.dims.size(); d-- > 0;)
    if (s.dims[d].empty() && v.type().shape[d] % tp->size == 0) {
      s.dims[d].push_back(mesh_axis::kTensor);
      return s;
    }
  return std::nullopt;
}

} // namespace

llvm::Expected<llvm::DenseMap<const Node *, int64_t>> pipelineStages(const Graph &g, int64_t stages) {
  llvm::DenseMap<const Node *, int64_t> stage;
  llvm::DenseSet<const Value *> inputOnly;
  std::vector<const Node *> open; // no stage from their operands
  for (const Node *n : g.nodes()) {
    if (n->is("Constant"))
      inputOnly.insert(n->output());
    if (isLeaf(n))
      continue;
    if (n->hasAttr(kStageAttr)) {
      stage[n] = n->intAttr(kStageAttr, 0);
      continue;
    }
    int64_t s = kReplicated;
    bool fromInputs = true;
    for (const Value *in : n->inputs()) {
      if (!in || g.isGraphInput(in) || inputOnly.count(in))
        continue;
      fromInputs = false;
      if (const Node *def = in->definingNode(); def && !isLeaf(def))
        s = std::max(s, stage.lookup(def));
    }
    if (fromInputs) {
      stage[n] = kReplicated;
      inputOnly.insert(n->outputs().begin(), n->outputs().end());
    } else {
      stage[n] = s;
      if (s == kReplicated)
        open.push_back(n);
    }
  }
  // What reads only weights (and inputs), such as ZeRO-3's gathers: on every
  // stage that reads it (each holds the weights it reads); read by none (an
  // output), on the stage of its weights' other readers.
  for (auto it = open.rbegin(); it != open.rend(); ++it) {
    const Node *n = *it;
    if (llvm::any_of(n->outputs(), [](const Value *o) {
          return llvm::any_of(o->users(), [](const Node *u) { return !isLeaf(u); });
        })) {
      stage[n] = kReplicated;
      continue;
    }
    int64_t s = stages;
    for (size_t i = 0; i < n->numInputs() && s == stages; ++i)
      if (const Value *in = n->input(i); in && in->definingNode() && in->definingNode()->is("Weight"))
        for (const Node *u : in->users())
          if (u != n && stage.lookup(u) != kReplicated && !isLeaf(u))
            s = std::min(s, stage.lookup(u));
    if (s == stages)
      return fail("node " + n->describe() + " reads no value of any pipeline stage: cannot place it");
    stage[n] = s;
  }
  for (const auto &[n, s] : stage)
    if (s >= stages)
      return fail("node " + n->describe() + " is on stage " + llvm::Twine(s) + " of " + llvm::Twine(stages));
  return stage;
}

llvm::Error tagPipelineStages(Graph &g) {
  int64_t stages = 0;
  for (const Node *n : g.nodes())
    stages = std::max(stages, n->intAttr(kStageAttr, -1) + 1);
  if (stages == 0)
    return llvm::Error::success();
  auto staged = pipelineStages(g, stages);
  if (!staged)
    return staged.takeError();
  for (Node *n : g.nodes())
    if (int64_t s = staged->lookup(n); s != kReplicated && !isLeaf(n))
      n->setAttr(kStageAttr, Attribute::ofInt(s));
  return llvm::Error::success();
}

llvm::Expected<PipelineSplit> splitPipeline(const Graph &g, int64_t stages) {
  auto staged = pipelineStages(g, stages);
  if (!staged)
    return staged.takeError();
  const llvm::DenseMap<const Node *, int64_t> &stage = *staged;
  std::vector<Node *> nodes = g.nodes();
  std::set<std::string> trained;
  for (const Value *o : g.outputs())
    if (llvm::StringRef(o->name()).startswith(optimizer_io::kGradPrefix))
      trained.insert(o->name().substr(std::strlen(optimizer_io::kGradPrefix)));
  // Per stage, the nodes without one it computes itself (it reads them,
  // directly or through others).
  std::vector<llvm::DenseSet<const Node *>> wanted(stages);
  for (int64_t s = 0; s < stages; ++s)
    for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
      const Node *n = *it;
      if (isLeaf(n) || stage.lookup(n) != kReplicated)
        continue;
      for (const Value *o : n->outputs())
        for (const Node *u : o->users())
          if (!isLeaf(u) && (stage.lookup(u) == s || (stage.lookup(u) == kReplicated && wanted[s].count(u))))
            wanted[s].insert(n);
      for (const Value *o : n->outputs())
        if (g.isGraphOutput(o) && s == stages - 1)
          wanted[s].insert(n);
    }
  auto on = [&](const Node *n, int64_t s) { return !isLeaf(n) && (stage.lookup(n) == s || wanted[s].count(n)); };
  PipelineSplit out;
  // Each stage holds its own copy of a trained weight several read
  // (copy-shared-weights): a copy's stage and its weight's sum their
  // gradients before the step.
  auto readersOf = [&](const Node *w) {
    std::set<int64_t> readers;
    for (const Node *u : w->output()->users())
      for (int64_t s = 0; s < stages; ++s)
        if (on(u, s))
          readers.insert(s);
    return readers;
  };
  for (const Node *n : nodes) {
    if (!n->is("Weight") || !trained.count(n->output()->name()))
      continue;
    std::set<int64_t> readers = readersOf(n);
    auto list = [](const std::set<int64_t> &s) {
      return llvm::join(llvm::map_range(s, [](int64_t k) { return std::to_string(k); }), " and ");
    };
    if (readers.size() > 1)
      return fail("trained weight '" + n->output()->name() + "' is read on stages " + list(readers) +
                  ": each stage needs a copy of its own (run copy-shared-weights after assign-stages)");
    if (!n->hasAttr(kCopyOfAttr) || readers.empty())
      continue;
    std::string of = n->stringAttr(kCopyOfAttr, "");
    const Value *w = g.findValue(of);
    std::set<int64_t> first = w && w->definingNode() && w->definingNode()->is("Weight") ? readersOf(w->definingNode())
                                                                                        : std::set<int64_t>{};
    int64_t to = *readers.begin();
    if (first.size() != 1 || !trained.count(of) || sharedWeightCopy(of, to) != n->output()->name() ||
        *first.begin() >= to)
      return fail("weight '" + n->output()->name() + "' is a copy of '" + of + "' read on stage " + llvm::Twine(to) +
                  ", but '" + of + "' is no trained weight of one earlier stage");
    out.weights.push_back({of, *first.begin(), to});
  }
  // Forward outputs leave from the last stage (the loss, the logits).
  llvm::DenseMap<const Node *, std::string> programOf = assignPrograms(g);
  for (const Value *o : g.outputs()) {
    const Node *def = o->definingNode();
    if (!def || isLeaf(def) || programOf.lookup(def) != kForwardProgram)
      continue;
    if (int64_t s = stage.lookup(def); s != kReplicated && s != stages - 1)
      return fail("graph output %" + o->name() + " is computed on stage " + llvm::Twine(s) + " of " +
                  llvm::Twine(stages) + "; a pipeline's outputs come from its last stage");
  }

  std::vector<Node *> sendsOf; // per edge: the node making its value (its program, its stage's)
  std::vector<std::optional<Sharding>> scattered; // per edge: the layout sent, when each tp rank sends 1/tp
  for (int64_t s = 0; s < stages; ++s) {
    auto here = [&](const Node *n) { return on(n, s); };
    GraphCopier c(g);
    Graph &sg = c.graph();
    for (const Value *in : g.inputs())
      if (llvm::any_of(in->users(), here))
        c.addInput(in);
    for (const Node *n : nodes) {
      if (!here(n))
        continue;
      for (const Value *in : n->inputs()) {
        if (!in || c.copied(in))
          continue;
        const Node *def = in->definingNode();
        if (isLeaf(def)) { // each stage holds the weights and constants it reads
          c.copyNode(*def, kStageAttr);
          continue;
        }
        // A value of another stage: received, in the program of its first reader here.
        int64_t tag = static_cast<int64_t>(out.edges.size());
        out.edges.push_back({in->name(), stage.lookup(def), s});
        sendsOf.push_back(const_cast<Node *>(def));
        std::optional<Sharding> part = scatterOverTp(g, *in);
        scattered.push_back(part);
        Node *recv = sg.createNode("Recv", {}, {part ? in->name() + ".part" : in->name()}, "partita");
        recv->setAttr("axis", Attribute::ofString(mesh_axis::kPipeline));
        recv->setAttr("peer", Attribute::ofInt(stage.lookup(def)));
        recv->setAttr("tag", Attribute::ofInt(tag));
        recv->setAttr("dtype", Attribute::ofInt(dtypeToOnnx(in->type().dtype)));
        recv->setAttr("shape", Attribute::ofInts({in->type().shape.begin(), in->type().shape.end()}));
        inProgramOf(*n, recv);
        recv->output()->type() = in->type();
        recv->output()->sharding() = part ? part : in->sharding();
        Value *got = recv->output();
        if (part) { // each tp rank received its 1/tp: all-gathered over tp (Megatron's scatter-gather)
          auto gathered = lowerReshard(sg, got, in->sharding() ? *in->sharding() : Sharding::replicated(in->type().rank()),
                                       in->name(), [&](Node *m) { inProgramOf(*n, m); });
          if (!gathered)
            return gathered.takeError();
          got = *gathered;
        }
        c.map(in, got);
      }
      c.copyNode(*n, kStageAttr);
    }
    for (const Value *o : g.outputs()) {
      const Node *def = o->definingNode();
      if (!def || isLeaf(def) || !here(def) || (stage.lookup(def) == kReplicated && s != stages - 1))
        continue;
      if (o->name() == optimizer_io::stageNorm(s)) { // this stage's norm: its grad_norm program's output
        Node *id = sg.createNode("Identity", {c.lookup(o)}, {optimizer_io::kNorm});
        id->output()->type() = o->type();
        id->setAttr(kProgramAttr, Attribute::ofString(optimizer_io::kGradNorm));
        sg.outputs().push_back(id->output());
        continue;
      }
      sg.outputs().push_back(c.lookup(o));
    }
    out.stages.push_back(c.take());
  }
  // What each stage sends, right after it is made: a Send whose token is an
  // output of the stage's graph (so it stays).
  for (size_t i = 0; i < out.edges.size(); ++i) {
    const PipelineEdge &e = out.edges[i];
    Graph &from = *out.stages[e.from];
    Value *v = from.findValue(e.value);
    if (!v)
      return fail("value %" + e.value + " is not in stage " + llvm::Twine(e.from) + "'s graph");
    if (scattered[i]) { // this tp rank's 1/tp of a value every tp rank holds
      auto part = lowerReshard(from, v, *scattered[i], e.value + ".part", [&](Node *m) { inProgramOf(*sendsOf[i], m); });
      if (!part)
        return part.takeError();
      v = *part;
    }
    Node *send = from.createNode("Send", {v}, {"sent." + std::to_string(i)}, "partita");
    send->setAttr("axis", Attribute::ofString(mesh_axis::kPipeline));
    send->setAttr("peer", Attribute::ofInt(e.to));
    send->setAttr("tag", Attribute::ofInt(static_cast<int64_t>(i)));
    inProgramOf(*sendsOf[i], send);
    send->output()->type() = TensorType{DType::F32, {0}, true};
    from.outputs().push_back(send->output());
  }
  for (auto &sg : out.stages) {
    if (auto err = sg->sortTopologically())
      return fail(llvm::toString(std::move(err)));
    // Receives first: each is posted when its program starts and waited for
    // right before its first reader, so the data arrives while the program
    // computes what does not need it. In the backward, what the gradients
    // sent to the stage before need comes before the rest (the weights'
    // gradients): that stage waits for them, not for this one's weight
    // gradients (the zero-bubble schedules' split of the backward).
    llvm::DenseMap<const Node *, std::string> program = assignPrograms(*sg);
    auto backward = [&](const Node *n) { return program.lookup(n) == optimizer_io::kBackward; };
    llvm::DenseSet<const Node *> urgent;
    std::vector<const Node *> work;
    for (const Node *n : sg->nodes())
      if (n->is("Send", "partita") && backward(n))
        work.push_back(n);
    while (!work.empty()) {
      const Node *n = work.back();
      work.pop_back();
      if (!urgent.insert(n).second)
        continue;
      for (const Value *in : n->inputs())
        if (const Node *def = in ? in->definingNode() : nullptr; def && backward(def))
          work.push_back(def);
    }
    std::vector<Node *> order, rest, later;
    for (Node *n : sg->nodes()) {
      if (n->is("Recv", "partita"))
        order.push_back(n);
      else if (backward(n) && !urgent.count(n))
        later.push_back(n);
      else
        rest.push_back(n);
    }
    order.insert(order.end(), rest.begin(), rest.end());
    order.insert(order.end(), later.begin(), later.end());
    sg->setOrder(order);
  }
  return out;
}

namespace {
/// split-pipeline as a pass: each part is named after its stage.
class SplitPipelinePass : public SplitPass {
public:
  llvm::StringRef name() const override { return "split-pipeline"; }
  llvm::Expected<std::vector<std::unique_ptr<Graph>>> split(const Graph &g) override {
    if (stages_ < 1)
      return passError(name(), "needs the number of stages: split-pipeline{stages=N}");
    auto pipe = splitPipeline(g, stages_);
    if (!pipe)
      return pipe.takeError();
    for (size_t s = 0; s < pipe->stages.size(); ++s)
      pipe->stages[s]->name = g.name + ".stage" + std::to_string(s);
    return std::move(pipe->stages);
  }

private:
  PassOption<int64_t> stages_{this, "stages", 0, "the pipeline's stages (pp x virtual stages; required)",
                              atLeast<int64_t>(1)};
};
} // namespace

PassInfo splitPipelinePass() {
  return {"split-pipeline", "Cut a staged graph into one graph per pipeline stage",
          "After assign-stages and every pass that adds nodes, each stage's nodes become a graph of their own; "
          "a value made on one stage and read on another is sent by a partita.Send and received by a "
          "partita.Recv (tag: the edge's index), split over tp when every tp rank holds it whole. Refused, "
          "naming the value: a forward output made before the last stage, a trained weight read on several "
          "stages without copies. Each part is named <graph>.stage<s>; the passes after it run on each.",
          [] { return std::make_unique<SplitPipelinePass>(); }};
}

} // namespace partita
