//===- HalfParameters.cpp - half-parameters pass --------------------------===//
//
// Mixed precision's parameter layout, the ZeRO paper's 2 + 2 + K: the model
// holds each trained weight in bf16 or fp16 (2 bytes per parameter), and the
// optimizer keeps a float32 master copy beside its moments (K = 12: master,
// m and v). On a training graph after add-optimizer, per partita.AdamW over
// weight w:
//
//   %w = Weight() {name = "fc.w"} : f32[..]        read by the forward, the backward and AdamW
//     →  %w = Weight() {name = "fc.w"} : bf16[..]   the stored float32 bytes rounded as they load
//        %master.w = Weight() {name = "master.w"} : f32[..]   the same bytes, unrounded
//        each program reading w reads its own %w.widened = Cast(%w) {to = f32}
//        AdamW(.., %master.w, ..) -> %updated.master.w (in place), and
//        %updated.w = Cast(%updated.master.w) {to = bf16}   (the forward's w, in place)
//
// So the master starts from the model's float32 values exactly, every step
// updates it in float32, and the forward and backward compute with its
// rounding, as a GPU's half GEMMs would read it. The data-parallel passes
// then shard the master with the moments (ZeRO-1 and up) and gather the
// updated parameter in the half type (half the bytes); under ZeRO-3 the half
// parameter is what is partitioned and all-gathered before each use.
// Frozen weights (no AdamW) stay float32.
//
// Option: dtype=bf16|fp16 (required).
//===----------------------------------------------------------------------===//
#include "passes/AddOptimizer.h"
#include "passes/MixedPrecision.h"
#include "passes/Passes.h"
#include <map>

namespace partita {

namespace io = optimizer_io;

namespace {

class HalfParameters : public HalfTypePass {
public:
  llvm::StringRef name() const override { return "half-parameters"; }

  llvm::Error run(Graph &g) override {
    if (auto err = requireHalfType())
      return err;
    std::vector<Node *> adams;
    for (Node *n : g.nodes())
      if (n->is("AdamW", "partita"))
        adams.push_back(n);
    if (adams.empty())
      return passError(name(), "the graph has no partita.AdamW node: run add-optimizer first");
    for (Node *a : adams)
      if (auto err = halve(g, a))
        return err;
    return g.sortTopologically();
  }

private:
  llvm::Error halve(Graph &g, Node *a) {
    Value *w = a->numInputs() > 3 ? a->input(3) : nullptr;
    Node *wn = w ? w->definingNode() : nullptr;
    if (!wn || !wn->is("Weight"))
      return passError(name(), "node " + a->describe() + " updates " + (w ? "%" + w->name() : std::string("nothing")) +
                                   ", which is no weight: the master copy is made from a stored parameter");
    if (llvm::StringRef(w->name()).startswith(io::master("")))
      return passError(name(), "node " + a->describe() + " already updates a master copy, %" + w->name() +
                                   " (run the pass once)");
    if (w->type().dtype != DType::F32)
      return passError(name(), "weight %" + w->name() + " is " + w->type().str() + ": half parameters are made " +
                                   "from float32 ones (run the pass once)");
    std::string master = io::master(w->name()), key = wn->stringAttr("name", w->name());
    if (g.findValue(master))
      return passError(name(), "the graph already has a value named '" + master + "', the name of %" + w->name() +
                                   "'s master copy");
    WeightRef ref = g.weights.find(key) ? *g.weights.find(key) : WeightRef{w->type()};
    ref.loadAs.reset();
    Value *m = getOrCreateWeight(g, master, ref);
    m->sharding() = w->sharding();
    a->setInput(3, m);

    // The model's copy: held rounded, widened where each program reads it.
    ref.loadAs = *half_;
    g.weights.add(key, ref);
    w->type().dtype = *half_;
    std::map<std::pair<std::string, int64_t>, std::vector<Node *>> readers; // by program and pipeline stage
    for (Node *u : w->users()) {
      auto &list = readers[{u->stringAttr(kProgramAttr, ""), u->intAttr(kStageAttr, -1)}];
      if (std::find(list.begin(), list.end(), u) == list.end())
        list.push_back(u);
    }
    for (auto &[where, users] : readers) {
      const auto &[program, stage] = where;
      std::string suffix = program.empty() ? "" : "." + program;
      Value *x = castTo(g, w, DType::F32, w->name() + ".widened" + suffix, program, stage);
      for (Node *u : users)
        for (size_t i = 0; i < u->numInputs(); ++i)
          if (u->input(i) == w)
            u->setInput(i, x);
    }

    // AdamW updates the master; the model's copy is its rounding.
    Value *updated = a->output(0);
    Value *rounded = castTo(g, updated, *half_, io::updated(master), a->stringAttr(kProgramAttr, io::kStep),
                          a->intAttr(kStageAttr, -1));
    g.replaceGraphOutput(updated, rounded); // names swap: updated.w is the half value, updated.master.w AdamW's
    g.outputs().push_back(updated);
    return llvm::Error::success();
  }

};

} // namespace

PassInfo halfParametersPass() {
  return {"half-parameters", "Hold trained weights in bf16 or fp16 with a float32 master copy the optimizer updates",
          "After add-optimizer: each weight a partita.AdamW updates is held in the half type (its float32 bytes "
          "rounded at load) and read through a Cast to float32 in each program; AdamW updates a float32 weight "
          "master.<w> of the same bytes in place (updated.master.<w>), and updated.<w> is its rounding.",
          [] { return std::make_unique<HalfParameters>(); }};
}

} // namespace partita
