//===- AdamWStep.cpp ------------------------------------------------------===//
#include "passes/AdamWStep.h"
#include "passes/autodiff/GradBuilder.h"

namespace partita {

std::unique_ptr<Graph> buildAdamWStep(llvm::ArrayRef<TensorType> params, const AdamWOptions &o, int64_t opset) {
  auto g = std::make_unique<Graph>();
  g->name = "adamw_step";
  g->opset = opset;
  TensorType scalar{DType::F32, {}, true};
  Value *lr = g->addInput("lr", scalar), *bc1 = g->addInput("bc1", scalar), *bc2 = g->addInput("bc2", scalar);
  GradBuilder b(*g, "adamw.t");
  auto k = [&](double v) { return b.scalar(v, DType::F32); };
  Value *decay = b.op("Sub", {k(1.0), b.op("Mul", {lr, k(o.weightDecay)})});
  Value *stepSize = b.op("Div", {lr, bc1});
  Value *rootBc2 = b.op("Sqrt", {bc2});
  std::vector<Value *> outs;
  for (size_t i = 0; i < params.size(); ++i) {
    std::string s = std::to_string(i);
    Value *p = g->addInput("p." + s, params[i]), *gr = g->addInput("g." + s, params[i]);
    Value *m = g->addInput("m." + s, params[i]), *v = g->addInput("v." + s, params[i]);
    Value *m2 = b.op("Add", {b.op("Mul", {m, k(o.beta1)}), b.op("Mul", {gr, k(1 - o.beta1)})});
    Value *v2 = b.op("Add", {b.op("Mul", {v, k(o.beta2)}), b.op("Mul", {b.op("Mul", {gr, gr}), k(1 - o.beta2)})});
    Value *denom = b.op("Add", {b.op("Div", {b.op("Sqrt", {v2}), rootBc2}), k(o.eps)});
    Value *p2 = b.op("Sub", {b.op("Mul", {p, decay}), b.op("Mul", {b.op("Div", {m2, denom}), stepSize})});
    for (auto [value, name] : {std::pair{p2, "p." + s + ".new"}, std::pair{m2, "m." + s + ".new"},
                               std::pair{v2, "v." + s + ".new"}}) {
      Node *id = g->createNode("Identity", {value}, {name});
      id->output()->type() = value->type();
      outs.push_back(id->output());
    }
  }
  g->outputs() = outs;
  llvm::consumeError(b.takeError());
  return g;
}

} // namespace partita
