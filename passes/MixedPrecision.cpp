//===- MixedPrecision.cpp - mixed-precision pass --------------------------===//
//
// bf16 or fp16 training as Megatron and DeepSpeed run it, on a model graph
// before add-loss and autodiff: every activation is held in the half type,
// and the loss is computed in fp32 from the half logits (the weights:
// half-parameters, HalfParameters.cpp).
//
// Each float32 value a node computes, and each float32 graph input, is
// rounded through the half type, a pair of casts its readers then read:
//
//   %h = Gelu(%x) : f32[..]
//     →  %h.half = Cast(%h) {to = bf16}   %h.rounded = Cast(%h.half) {to = f32}
//
// The compute stays fp32 (the kernels read fp32; the CPU has no half GEMM
// here), so an op's result is what a half op with fp32 accumulation gives:
// the rounding is at op boundaries. autodiff differentiates the casts into
// the same pair on every gradient, so the backward is rounded too, and an
// fp16 gradient past 65504 overflows to inf as it would on a GPU: what loss
// scaling (autodiff{loss-scale=1}) and the trainer's overflow check are for.
// A view or move of values already rounded (Reshape, Transpose, Slice,
// Gather of activations...) needs no second rounding.
//
// Not rounded here: weights (an fp32 weight feeds a projection directly,
// which is what tensor parallelism's annotation recognises) and values made
// from weights and constants only (a tied head's transposed table). After
// add-optimizer, half-parameters holds the trained weights in the half type
// (their float32 masters in the optimizer), so a projection then multiplies
// half activations by the rounded weight, as a GPU's half GEMM does.
//
// Option: dtype=bf16|fp16 (required).
//===----------------------------------------------------------------------===//
#include "compiler/ops/OpRegistry.h"
#include "passes/MixedPrecision.h"
#include "passes/Passes.h"
#include "llvm/ADT/DenseSet.h"

namespace partita {

namespace {

class MixedPrecision : public HalfTypePass {
public:
  llvm::StringRef name() const override { return "mixed-precision"; }

  llvm::Error run(Graph &g) override {
    if (auto err = requireHalfType())
      return err;
    llvm::DenseSet<const Value *> rounded, constant; // constant: made from weights and constants only
    const std::vector<Node *> model = g.nodes(); // not the casts made here
    for (Value *in : g.inputs())
      if (in->type().dtype == DType::F32)
        round(g, in, rounded);
    for (Node *n : model) {
      if (n->is("Weight")) { // with what is made from weights only (a tied head's transpose): fp32
        constant.insert(n->output());
        continue;
      }
      bool fromConstants = true, inputsRounded = true;
      for (const Value *in : n->inputs()) {
        if (!in)
          continue;
        fromConstants &= constant.count(in) > 0;
        if (in->type().dtype == DType::F32 && !rounded.count(in))
          inputsRounded = false;
      }
      if (n->is("Constant") || fromConstants) {
        for (const Value *out : n->outputs())
          constant.insert(out);
        continue;
      }
      bool moved = hasTrait(*n, OpTrait::MovesElements) && inputsRounded;
      for (Value *out : n->outputs()) {
        if (out->type().dtype != DType::F32)
          continue;
        if (moved)
          rounded.insert(out);
        else
          round(g, out, rounded);
      }
    }
    return g.sortTopologically();
  }

private:
  /// Gives v's readers (graph outputs included) v rounded through the half type.
  void round(Graph &g, Value *v, llvm::DenseSet<const Value *> &rounded) {
    std::vector<Node *> readers(v->users().begin(), v->users().end());
    bool output = g.isGraphOutput(v);
    if (readers.empty() && !output)
      return;
    // Named after the producer ("/h.3/attn/Softmax/to_half"): they belong to its layer (LayerNames.h),
    // which recompute{mode=full} recomputes whole.
    const Node *d = v->definingNode();
    std::string base = d && !d->name().empty() ? d->name() : "";
    auto cast = [&](Value *x, DType to, const char *suffix) {
      Node *c = g.createNode("Cast", {x}, {v->name() + "." + suffix}, "", base.empty() ? "" : base + "/" + suffix);
      c->setAttr("to", Attribute::ofInt(dtypeToOnnx(to)));
      c->output()->type() = TensorType{to, v->type().shape, true};
      return c->output();
    };
    Value *h = cast(v, *half_, "to_half");
    Value *r = cast(h, DType::F32, "from_half");
    for (Node *u : readers)
      for (size_t i = 0; i < u->numInputs(); ++i)
        if (u->input(i) == v)
          u->setInput(i, r);
    if (output)
      g.replaceGraphOutput(v, r);
    rounded.insert(r);
  }

};

} // namespace

PassInfo mixedPrecisionPass() {
  return {"mixed-precision", "Round every activation through bf16 or fp16",
          "Before add-loss and autodiff: each float32 value a node computes, and each float32 graph input, "
          "is read through a Cast to the half type and back, so activations and (after autodiff) gradients "
          "carry half precision while the compute and the weights stay fp32.",
          [] { return std::make_unique<MixedPrecision>(); }};
}

} // namespace partita
