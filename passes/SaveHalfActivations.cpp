//===- SaveHalfActivations.cpp - save-half-activations pass ---------------===//
//
// Under mixed precision (passes/MixedPrecision.cpp) a forward value is read
// as the second of two casts, %r = Cast(%h) {to = f32} of %h = Cast(%v)
// {to = bf16}. When the backward reads %r, the forward would save %r, in
// float32, between a micro-batch's forward and its backward. This pass, on
// the training graph after autodiff, gives the backward its own
// Cast(%h) {to = f32}, so what is saved is %h, in the half type: half the
// bytes, and the same values (the cast back is exact).
//
//   %h = Cast(%v) {to = 16}   %r = Cast(%h) {to = 1}   %d = Mul(%g, %r) {program = "backward"}
//     →  %r.backward = Cast(%h) {to = 1, program = "backward"}   %d = Mul(%g, %r.backward) ...
//
// Two more cases read half values the same way:
//  * the backward reading %v itself (an op's grad rule reads its own result:
//    Softmax's, a product's operands) reads %h's widening: the value a half
//    program would have kept;
//  * a value that only moves rounded elements (the head reshapes and
//    transposes of q, k, v) gets a cast to the half type in the forward,
//    which is what is saved, and the backward widens it back.
// Each copy keeps the original's other attributes (a pipeline stage); a
// backward widening is made on its readers' stage (one per stage that reads).
//===----------------------------------------------------------------------===//
#include "compiler/ops/OpRegistry.h"
#include "passes/AddOptimizer.h"
#include "passes/MixedPrecision.h"
#include "passes/Passes.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include <map>

namespace partita {

namespace {

using optimizer_io::inBackward;
using optimizer_io::inForward;

/// %r = Cast(%h) {to = f32} of a half value, in the forward.
bool widensHalf(const Node &n) {
  return n.is("Cast") && n.numInputs() == 1 && n.input(0) && isHalfFloat(n.input(0)->type().dtype) &&
         n.output()->type().dtype == DType::F32 && inForward(n);
}

class SaveHalfActivations : public Pass {
public:
  llvm::StringRef name() const override { return "save-half-activations"; }

  llvm::Error run(Graph &g) override {
    const std::vector<Node *> nodes = g.nodes();
    llvm::DenseMap<const Value *, Value *> halfOf; // a forward f32 value -> a half value holding it exactly
    llvm::DenseSet<const Value *> rounded;        // forward f32 values whose elements are half values
    for (Node *n : nodes) {
      if (!inForward(*n))
        continue;
      if (widensHalf(*n)) {
        rounded.insert(n->output());
        halfOf[n->output()] = n->input(0);
        Node *narrow = n->input(0)->definingNode(); // %h = Cast(%v): %v, as the backward reads it, is %h too
        if (narrow && narrow->is("Cast") && narrow->input(0) && narrow->input(0)->type().dtype == DType::F32)
          halfOf.try_emplace(narrow->input(0), n->input(0));
        continue;
      }
      bool moved = hasTrait(*n, OpTrait::MovesElements);
      for (const Value *in : n->inputs())
        if (in && in->type().dtype == DType::F32 && !rounded.count(in))
          moved = false;
      if (moved)
        for (const Value *out : n->outputs())
          if (out->type().dtype == DType::F32)
            rounded.insert(out);
    }
    DType half = halfOf.empty() ? DType::BF16 : halfOf.begin()->second->type().dtype; // the graph's one half type
    for (Node *n : nodes) {
      if (!inForward(*n))
        continue;
      for (Value *v : n->outputs()) {
        std::vector<Node *> readers;
        for (Node *u : v->users())
          if (inBackward(*u))
            readers.push_back(u);
        if (readers.empty() || v->type().dtype != DType::F32)
          continue;
        Value *h = halfOf.lookup(v);
        if (!h && rounded.count(v)) // saved as a cast of its own
          h = castOf(g, *n, v, half, /*backward=*/false);
        if (!h)
          continue;
        // One widening per pipeline stage of the readers, on that stage: a
        // stage's backward that reads an activation the stage before made
        // (the one it received) then receives the half value, sent when
        // that forward made it. Widened on the maker's stage, it would come
        // from the maker's backward, which waits for this backward's
        // gradient (under interleaving, a cycle between the ranks).
        std::map<int64_t, Value *> wideOn; // reader stage (-1: none) -> its widening
        for (Node *u : readers) {
          const int64_t stage = u->hasAttr(kStageAttr) ? u->intAttr(kStageAttr, 0) : -1;
          Value *&wide = wideOn[stage];
          if (!wide)
            wide = castOf(g, *n, h, DType::F32, /*backward=*/true, stage);
          for (size_t i = 0; i < u->numInputs(); ++i)
            if (u->input(i) == v)
              u->setInput(i, wide);
        }
      }
    }
    return g.sortTopologically();
  }

private:
  /// Cast(v) to `to`, in the forward or the backward, on `like`'s stage (or
  /// on `stage`, when >= 0).
  static Value *castOf(Graph &g, const Node &like, Value *v, DType to, bool backward, int64_t stage = -1) {
    const char *suffix = backward ? "widened" : "saved";
    // Named after `like` ("/h.3/attn/Reshape/saved"): in its layer, for recompute{mode=full}.
    Node *c = g.createNode("Cast", {v}, {v->name() + "." + suffix}, "",
                           like.name().empty() ? "" : like.name() + "/" + suffix);
    for (const auto &[k, a] : like.attrs())
      if (k == kStageAttr)
        c->setAttr(k, stage >= 0 ? Attribute::ofInt(stage) : a);
    c->setAttr("to", Attribute::ofInt(dtypeToOnnx(to)));
    if (backward)
      c->setAttr(kProgramAttr, Attribute::ofString(optimizer_io::kBackward));
    c->output()->type() = TensorType{to, v->type().shape, true};
    return c->output();
  }
};

} // namespace

PassInfo saveHalfActivationsPass() {
  return {"save-half-activations", "Save half-precision activations for the backward, not their fp32 casts",
          "After autodiff under mixed precision: the backward reads each saved activation through a cast of "
          "its own from the half value, so the forward saves half values (half the bytes).",
          [] { return std::make_unique<SaveHalfActivations>(); }};
}

} // namespace partita
