//===- AdamWStep.cpp ------------------------------------------------------===//
#include "passes/AdamWStep.h"

namespace partita {

std::unique_ptr<Graph> buildAdamWStep(llvm::ArrayRef<TensorType> params, const AdamWOptions &o, int64_t opset) {
  auto g = std::make_unique<Graph>();
  g->name = "adamw_step";
  g->opset = opset;
  TensorType scalar{DType::F32, {}, true};
  Value *lr = g->addInput("lr", scalar), *bc1 = g->addInput("bc1", scalar), *bc2 = g->addInput("bc2", scalar);
  std::vector<Value *> outs;
  for (size_t i = 0; i < params.size(); ++i) {
    std::string s = std::to_string(i);
    Value *p = g->addInput("p." + s, params[i]), *gr = g->addInput("g." + s, params[i]);
    Value *m = g->addInput("m." + s, params[i]), *v = g->addInput("v." + s, params[i]);
    Node *n = g->createNode("AdamW", {lr, bc1, bc2, p, gr, m, v}, {"p." + s + ".new", "m." + s + ".new", "v." + s + ".new"},
                            "partita");
    n->setAttr("beta1", Attribute::ofFloat(o.beta1));
    n->setAttr("beta2", Attribute::ofFloat(o.beta2));
    n->setAttr("epsilon", Attribute::ofFloat(o.eps));
    n->setAttr("weight_decay", Attribute::ofFloat(o.weightDecay));
    for (Value *out : n->outputs()) {
      out->type() = params[i];
      outs.push_back(out);
    }
  }
  g->outputs() = outs;
  return g;
}

} // namespace partita
