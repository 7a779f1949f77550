//===- HalfGradients.cpp - half-gradients pass ----------------------------===//
//
// Mixed precision's weight gradients in the half type, as a GPU's half
// backward leaves them: on the training graph after autodiff, each gradient
// output grad.<w> (float32, from half activations and half output
// gradients) becomes its rounding to bf16 or fp16. What the data-parallel
// passes then place on it (the all-reduce over dp, ZeRO's reduce-scatter)
// moves the half type: half the bytes. The step reads it half (add-optimizer
// widens it per weight as AdamW and the norm read it); over several
// micro-batches the runtime sums in float32 and rounds the sum once.
//
//   %grad.w = Identity(%t) {program = "backward"} : f32[8,4]
//     →  %grad.w.f32 = Identity(%t) ...   %grad.w = Cast(%grad.w.f32) {to = 16, program = "backward"} : bf16[8,4]
//
// Option: dtype=bf16|fp16 (required).
//===----------------------------------------------------------------------===//
#include "passes/AddOptimizer.h"
#include "passes/MixedPrecision.h"
#include "passes/Passes.h"

namespace partita {

namespace {

class HalfGradients : public HalfTypePass {
public:
  llvm::StringRef name() const override { return "half-gradients"; }

  llvm::Error run(Graph &g) override {
    if (auto err = requireHalfType())
      return err;
    std::vector<Value *> grads;
    for (Value *out : g.outputs())
      if (llvm::StringRef(out->name()).startswith(optimizer_io::kGradPrefix) && out->type().dtype == DType::F32)
        grads.push_back(out);
    for (Value *grad : grads) {
      const Node *d = grad->definingNode();
      Value *half = castTo(g, grad, *half_, grad->name() + ".f32", optimizer_io::kBackward, // names swap: the f32 value
                           d ? d->intAttr(kStageAttr, -1) : -1);                            // is grad.<w>.f32
      g.replaceGraphOutput(grad, half); // the output keeps its name, grad.<w>
    }
    return g.sortTopologically();
  }
};

} // namespace

PassInfo halfGradientsPass() {
  return {"half-gradients", "Round the weight gradients (grad.<w> outputs) to bf16 or fp16",
          "After autodiff under mixed precision: each float32 graph output grad.<w> becomes its cast to the "
          "half type, so the data-parallel reductions placed on it move half the bytes.",
          [] { return std::make_unique<HalfGradients>(); }};
}

} // namespace partita
