//===- AddOptimizer.cpp - add-optimizer pass ------------------------------===//
//
// Appends AdamW to a global training graph whose outputs include grad.<w>
// for each trained weight w (autodiff's). The optimizer reads what the
// runtime summed over a step's micro-batches, so it is joined to the
// gradients through inputs rather than their values: per weight w
//   accumulated_grad.w, adam_m.w, adam_v.w   inputs laid out as w is
//   updated.w, updated.adam_m.w, updated.adam_v.w = AdamW(lr, bc1, bc2, w,
//       accumulated_grad.w, adam_m.w, adam_v.w, grad_scale)       (program "step")
// and grad_norm = √(Σ_w Σ accumulated_grad.w²)                   (program "grad_norm")
// with scalar inputs lr, bias_correction1/2 and grad_scale. The new inputs
// take their weight's sharding, so propagate-sharding carries every split of
// the weight through its update and the planner places the norm's reductions
// (a sum over a split gradient is partial). The squares are summed per set
// of splitting axes first, so the tp-split weights cost one all-reduce. A
// pipeline stage's copy of a shared weight (copy-shared-weights) is updated
// like any weight but left out of the norm: the parameter counts once. A
// half gradient (mixed precision, half-gradients) makes accumulated_grad.w
// half too; AdamW and the norm each read its Cast to float32. A weight whose
// blocks are copies of one kv head (replicate-kv-heads, attribute kv_copies)
// is one parameter: each program reads its gradient through partita.SumCopies
// (the copies' sum in every copy), and the norm counts it once.
//===----------------------------------------------------------------------===//
#include "passes/AddOptimizer.h"
#include "compiler/plan/Plan.h"
#include "passes/Passes.h"
#include "passes/SplitPipeline.h"
#include "passes/autodiff/GradBuilder.h"
#include "llvm/ADT/StringExtras.h"
#include <functional>
#include <map>
#include <set>

namespace partita {

namespace io = optimizer_io;

namespace {

/// The pipeline stage that updates weight `w`: where its gradient is
/// complete (a table read on two stages, a tied head's, sums both
/// contributions there); -1: no pipeline.
int64_t stageOfWeight(const Graph &g, const Value &w) {
  const Value *grad = g.findValue(optimizer_io::gradOutput(w.name()));
  const Node *def = grad ? grad->definingNode() : nullptr;
  if (def && def->hasAttr(kStageAttr))
    return def->intAttr(kStageAttr, -1);
  for (const Node *u : w.users())
    if (u->hasAttr(kStageAttr))
      return u->intAttr(kStageAttr, -1);
  return -1;
}

class AddOptimizer : public Pass {
public:
  explicit AddOptimizer(const AdamWOptions &o = {}) {
    beta1_ = o.beta1;
    beta2_ = o.beta2;
    eps_ = o.eps;
    weightDecay_ = o.weightDecay;
  }
  llvm::StringRef name() const override { return "add-optimizer"; }

  llvm::Error run(Graph &g) override {
    o_ = AdamWOptions{beta1_, beta2_, eps_, weightDecay_};
    if (!o_.valid())
      return passError(name(), "AdamW needs betas in [0, 1), eps > 0 and weight-decay >= 0");
    std::vector<Value *> weights;
    std::vector<DType> gradTypes;
    for (Value *out : g.outputs()) {
      llvm::StringRef w(out->name());
      if (!w.consume_front(optimizer_io::kGradPrefix))
        continue;
      Value *wv = g.findValue(w);
      if (!wv || !wv->definingNode() || !wv->definingNode()->is("Weight"))
        return passError(name(), "gradient output %" + out->name() + " has no weight named '" + w + "'");
      // A half gradient (mixed precision's, half-gradients) is held half; the optimizer widens it.
      DType gt = out->type().dtype;
      if (wv->type().dtype != DType::F32 || out->type().shape != wv->type().shape ||
          (gt != DType::F32 && !isHalfFloat(gt)))
        return passError(name(), "gradient output %" + out->name() + " is " + out->type().str() + ", weight %" +
                                     w + " is " + wv->type().str() +
                                     ": AdamW here updates f32 weights with an f32 (or bf16, fp16) gradient of "
                                     "their shape");
      weights.push_back(wv);
      gradTypes.push_back(gt);
    }
    if (weights.empty())
      return passError(name(), "the graph has no gradient outputs (grad.<weight>): run autodiff first");
    std::vector<std::string> names{io::kLr, io::kBc1, io::kBc2, io::kGradScale, io::kNorm};
    for (const Value *w : weights)
      for (const std::string &n : {io::gradient(w->name()), io::moment1(w->name()), io::moment2(w->name()),
                                   io::updated(w->name()), io::updated(io::moment1(w->name())),
                                   io::updated(io::moment2(w->name()))})
        names.push_back(n);
    for (const std::string &n : names)
      if (g.findValue(n))
        return passError(name(), "the graph already has a value named '" + n + "', a name the optimizer uses");

    if (auto err = tagPipelineStages(g)) // every reader of a weight on its stage
      return passError(name(), llvm::toString(std::move(err)));
    TensorType scalar{DType::F32, {}, true};
    Value *lr = g.addInput(io::kLr, scalar), *bc1 = g.addInput(io::kBc1, scalar), *bc2 = g.addInput(io::kBc2, scalar),
          *scale = g.addInput(io::kGradScale, scalar);
    GradBuilder b(g, "optimizer");
    auto tag = [](Value *v, const char *program) {
      v->definingNode()->setAttr(io::kProgramAttr, Attribute::ofString(program));
      return v;
    };
    auto laidOutAs = [&](const std::string &n, const Value *w) {
      Value *in = g.addInput(n, w->type());
      in->sharding() = w->sharding();
      return in;
    };
    // Square sums grouped by the axes that split them (std::map: a stable order).
    // Pipeline stages (assign-stages) each sum their own weights' squares.
    std::map<std::pair<int64_t, std::string>, Value *> sums;
    std::vector<Value *> outs;
    auto stageSince = [&](size_t mark, int64_t stage) {
      if (stage >= 0)
        for (Node *n : g.nodesCreatedSince(mark))
          if (!n->is("Constant"))
            n->setAttr(kStageAttr, Attribute::ofInt(stage));
    };
    for (size_t k = 0; k < weights.size(); ++k) {
      Value *w = weights[k];
      size_t mark = g.creationMark();
      const std::string &p = w->name();
      Value *grad = laidOutAs(io::gradient(p), w);
      // A half gradient (mixed precision) is read as it is reduced and held:
      // each optimizer program widens its own float32 copy, one weight at a time.
      grad->type().dtype = gradTypes[k];
      std::function<Value *(const char *)> wide = [&](const char *program) {
        return gradTypes[k] == DType::F32
                   ? grad
                   : tag(b.op("Cast", {grad}, {{"to", Attribute::ofInt(dtypeToOnnx(DType::F32))}}), program);
      };
      int64_t copies = w->definingNode()->intAttr("kv_copies", 1);
      if (copies > 1) // the copies' gradients summed, in each program that reads them
        wide = [&, inner = wide, copies](const char *program) {
          const WeightRef *ref = g.weights.find(w->definingNode()->stringAttr("name", ""));
          const WeightRef::Repeat rep = ref && ref->repeat ? *ref->repeat : WeightRef::Repeat{};
          Value *sum = tag(b.op("SumCopies", {inner(program)},
                                {{"dim", Attribute::ofInt(rep.dim)},
                                 {"block", Attribute::ofInt(rep.block)},
                                 {"copies", Attribute::ofInt(copies)},
                                 {"axis", Attribute::ofString(mesh_axis::kTensor)},
                                 {"numel", Attribute::ofInt(w->type().numel())}},
                                "partita"),
                           program);
          return sum;
        };
      Value *m = laidOutAs(io::moment1(p), w), *v = laidOutAs(io::moment2(p), w);
      int64_t stage = stageOfWeight(g, *w);
      // A stage's copy of a shared weight (copy-shared-weights) has the
      // weight's summed gradient: the norm counts the parameter once.
      if (!w->definingNode()->hasAttr(kCopyOfAttr)) {
        Value *g32 = wide(io::kGradNorm);
        Value *sq = tag(b.op("ReduceSum", {tag(b.op("Mul", {g32, g32}), io::kGradNorm)},
                             {{"keepdims", Attribute::ofInt(0)}}),
                        io::kGradNorm);
        if (copies > 1) // each copy holds the parameter's gradient: count one
          sq = tag(b.op("Mul", {sq, b.scalar(1.0 / static_cast<double>(copies), DType::F32)}), io::kGradNorm);
        // The axes splitting w: its square sum is partial over exactly those.
        std::set<std::string> axes;
        if (w->sharding())
          for (const auto &d : w->sharding()->dims)
            axes.insert(d.begin(), d.end());
        std::string key = llvm::join(axes.begin(), axes.end(), ",");
        Value *&sum = sums[{stage, key}];
        sum = sum ? tag(b.op("Add", {sum, sq}), io::kGradNorm) : sq;
      }
      Node *adam = g.createNode("AdamW", {lr, bc1, bc2, w, wide(io::kStep), m, v, scale},
                                {io::updated(p), io::updated(io::moment1(p)), io::updated(io::moment2(p))}, "partita");
      adam->setAttr("beta1", Attribute::ofFloat(o_.beta1));
      adam->setAttr("beta2", Attribute::ofFloat(o_.beta2));
      adam->setAttr("epsilon", Attribute::ofFloat(o_.eps));
      adam->setAttr("weight_decay", Attribute::ofFloat(o_.weightDecay));
      adam->setAttr(io::kProgramAttr, Attribute::ofString(io::kStep));
      for (Value *out : adam->outputs()) {
        out->type() = w->type();
        outs.push_back(out);
      }
      stageSince(mark, stage);
    }
    std::map<int64_t, Value *> totals;
    for (auto &[key, sum] : sums) {
      size_t mark = g.creationMark();
      Value *&total = totals[key.first];
      total = total ? tag(b.op("Add", {total, sum}), io::kGradNorm) : sum;
      stageSince(mark, key.first);
    }
    for (const Value *w : weights) // a stage updating only copies: its norm is 0
      if (int64_t stage = stageOfWeight(g, *w); !totals.count(stage))
        totals[stage] = b.scalar(0.0, DType::F32);
    if (auto err = b.takeError())
      return passError(name(), llvm::toString(std::move(err)));
    for (Value *out : outs)
      g.outputs().push_back(out);
    // One norm; under a pipeline one per stage, of its own gradients
    // (grad_norm.stage<s>), which the runtime combines over the stages.
    for (auto &[stage, total] : totals) {
      Node *norm = g.createNode("Sqrt", {total}, {stage < 0 ? std::string(io::kNorm) : io::stageNorm(stage)});
      norm->output()->type() = scalar;
      norm->setAttr(io::kProgramAttr, Attribute::ofString(io::kGradNorm));
      if (stage >= 0)
        norm->setAttr(kStageAttr, Attribute::ofInt(stage));
      g.outputs().push_back(norm->output());
    }
    g.keepOrder(); // the optimizer after the training graph, where it was appended
    return llvm::Error::success();
  }

private:
  PassOption<double> beta1_{this, "beta1", 0.9, "AdamW's first-moment decay, in [0, 1)"};
  PassOption<double> beta2_{this, "beta2", 0.999, "AdamW's second-moment decay, in [0, 1)"};
  PassOption<double> eps_{this, "eps", 1e-8, "AdamW's epsilon, > 0"};
  PassOption<double> weightDecay_{this, "weight-decay", 0.01, "decoupled weight decay, >= 0"};
  AdamWOptions o_; // the options above, as the run reads them
};

} // namespace

std::unique_ptr<Pass> createAddOptimizer(const AdamWOptions &options) {
  return std::make_unique<AddOptimizer>(options);
}

PassInfo addOptimizerPass() {
  return {"add-optimizer", "Append AdamW and the gradient norm to a training graph",
          "Per weight with a grad.<w> output: inputs accumulated_grad.w, adam_m.w, adam_v.w laid out as w, and a "
          "partita.AdamW node (program \"step\") giving updated.w and the updated moments; the L2 norm of the "
          "accumulated gradients as output grad_norm (program \"grad_norm\"). Scalar inputs lr, bias_correction1, "
          "bias_correction2, grad_scale. split-programs cuts the programs apart.",
          [] { return std::make_unique<AddOptimizer>(); }};
}

} // namespace partita
