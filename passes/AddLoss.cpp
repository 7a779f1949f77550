//===- AddLoss.cpp - add-loss pass ----------------------------------------===//
//
// Appends next-token cross-entropy to a language model: graph output 0 (the
// logits, [..., V]) and a new int64 input `labels` ([...], the token to
// predict at each position, -100 to ignore it) give the mean negative
// log-likelihood over the counted tokens, as torch.nn.functional.cross_entropy
// computes it. The loss becomes graph output 0; the logits stay as output 1.
//
//   loss = -sum(log_softmax(logits)[label] * counted) / sum(counted)
//
// The log-softmax is spelled out as Megatron's vocab-parallel cross-entropy
// computes it, so that with a vocabulary-split LM head every step is a local
// op or a reduction over the vocabulary, which the sharding passes turn into
// an all-reduce of [tokens] values instead of gathering the logits:
//   m = max(logits)              (all-reduce max)
//   z = logits - m
//   lse = log(sum(exp(z)))       (all-reduce sum)
//   log p[label] = sum(z * onehot(label)) - lse   (all-reduce sum)
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"
#include "passes/autodiff/GradBuilder.h"

namespace partita {

namespace {

class AddLoss : public Pass {
public:
  llvm::StringRef name() const override { return "add-loss"; }

  llvm::Error run(Graph &g) override {
    if (g.outputs().empty())
      return passError(name(), "the graph has no outputs");
    Value *logits = g.outputs()[0];
    const TensorType &lt = logits->type();
    if (lt.rank() < 2 || !isFloat(lt.dtype))
      return passError(name(), "output %" + logits->name() + " is " + lt.str() +
                                   "; cross-entropy needs float logits [..., vocab]");
    if (g.findValue("labels"))
      return passError(name(), "the graph already has a value named 'labels'");
    Shape labelShape(lt.shape.begin(), lt.shape.end() - 1);
    int64_t vocab = lt.shape.back(), rank = lt.rank();
    Value *labels = g.addInput("labels", TensorType{DType::I64, labelShape, true});
    GradBuilder b(g, "loss.t");
    DType t = lt.dtype;
    auto keep = [](int64_t k) { return std::map<std::string, Attribute>{{"keepdims", Attribute::ofInt(k)}}; };
    Value *m = b.op("ReduceMax", {logits}, {{"axes", Attribute::ofInts({-1})}, {"keepdims", Attribute::ofInt(1)}});
    Value *z = b.op("Sub", {logits, m});
    Value *lse = b.op("Log", {b.op("ReduceSum", {b.op("Exp", {z}), b.ints({-1})}, keep(0))});
    std::vector<int64_t> range(static_cast<size_t>(vocab));
    for (int64_t i = 0; i < vocab; ++i)
      range[i] = i;
    Shape rangeShape(static_cast<size_t>(rank), 1);
    rangeShape.back() = vocab;
    Value *classes = g.createConstant(Tensor::fromInts(DType::I64, rangeShape, range), "loss.classes");
    Value *target = b.op("Unsqueeze", {labels, b.ints({-1})});
    Value *onehot = b.op("Cast", {b.op("Equal", {target, classes})}, {{"to", Attribute::ofInt(dtypeToOnnx(t))}});
    Value *picked = b.op("Sub", {b.op("ReduceSum", {b.op("Mul", {z, onehot}), b.ints({-1})}, keep(0)), lse});
    Value *ignore = g.createConstant(Tensor::fromInts(DType::I64, {}, {ignoreIndex_}), "loss.ignore_index");
    Value *counted = b.op("Cast", {b.op("Not", {b.op("Equal", {labels, ignore})})},
                          {{"to", Attribute::ofInt(dtypeToOnnx(t))}});
    std::vector<int64_t> all;
    for (int64_t d = 0; d + 1 < rank; ++d)
      all.push_back(d);
    auto total = [&](Value *v) { return b.op("ReduceSum", {v, b.ints(all)}, {{"keepdims", Attribute::ofInt(0)}}); };
    Value *nll = b.op("Neg", {total(b.op("Mul", {picked, counted}))});
    Value *count = b.op("Max", {total(counted), b.scalar(1.0, t)}); // no counted token: loss 0, not NaN
    Node *loss = g.createNode("Div", {nll, count}, {"loss"});
    loss->output()->type() = TensorType{t, {}, true};
    if (auto err = b.takeError())
      return passError(name(), llvm::toString(std::move(err)));
    g.outputs().insert(g.outputs().begin(), loss->output());
    return llvm::Error::success();
  }

private:
  PassOption<int64_t> ignoreIndex_{this, "ignore-index", -100, "label value that is not counted"};
};

} // namespace

PassInfo addLossPass() {
  return {"add-loss", "Append next-token cross-entropy over graph output 0 (the logits)",
          "Adds an int64 input 'labels' (ignore_index -100) and makes the mean cross-entropy graph "
          "output 0, as torch.nn.functional.cross_entropy.",
          [] { return std::make_unique<AddLoss>(); }};
}

} // namespace partita
