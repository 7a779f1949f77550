// Every gradient rule against central finite differences in float64.
// Each case computes y = f(inputs); the test differentiates
// loss = sum(y * R) for a fixed random R (a random projection of the whole
// Jacobian) and compares d loss / d input with (loss(x+h) - loss(x-h)) / 2h.
#include "compiler/ir/Parser.h"
#include "compiler/ops/OpRegistry.h"
#include "compiler/pass/PassManager.h"
#include "llvm/ADT/DenseMap.h"
#include <cmath>
#include <gtest/gtest.h>
#include <random>

using namespace partita;

namespace {

struct Case {
  const char *name;
  const char *body; // IR: inputs (f64) and nodes producing %y, then "return %y"
  bool positive = false;
};

using Env = llvm::DenseMap<const Value *, Tensor>;

/// Evaluates every node with the reference evaluator.
std::vector<Tensor> evaluate(const Graph &g, const std::vector<Tensor> &inputs) {
  Env env;
  for (size_t i = 0; i < inputs.size(); ++i)
    env[g.inputs()[i]] = inputs[i];
  for (const Node *n : g.nodes()) {
    std::vector<Tensor> ins;
    for (const Value *v : n->inputs())
      if (v)
        ins.push_back(env.lookup(v));
    auto outs = evaluateNode(*n, ins);
    EXPECT_TRUE(static_cast<bool>(outs)) << (outs ? "" : llvm::toString(outs.takeError()));
    if (!outs)
      return {};
    for (size_t i = 0; i < n->numOutputs(); ++i)
      env[n->output(i)] = (*outs)[i];
  }
  std::vector<Tensor> results;
  for (const Value *v : g.outputs())
    results.push_back(env.lookup(v));
  return results;
}

/// loss = ReduceSum(y * R), appended to the case graph.
std::unique_ptr<Graph> withLoss(const Case &c, std::mt19937 &rng) {
  auto g = parseGraph(c.body, c.name);
  EXPECT_TRUE(static_cast<bool>(g)) << (g ? "" : llvm::toString(g.takeError()));
  if (!g)
    return nullptr;
  Graph &G = **g;
  Value *y = G.outputs()[0];
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<double> r(static_cast<size_t>(y->type().numel()));
  for (double &v : r)
    v = u(rng);
  Value *R = G.createConstant(Tensor::fromDoubles(DType::F64, y->type().shape, r), "R");
  Node *mul = G.createNode("Mul", {y, R}, {"yr"});
  mul->output()->type() = y->type();
  Node *sum = G.createNode("ReduceSum", {mul->output()}, {"loss"});
  sum->setAttr("keepdims", Attribute::ofInt(0));
  sum->output()->type() = TensorType{DType::F64, {}, true};
  G.outputs() = {sum->output()};
  return std::move(*g);
}

class GradientCheck : public ::testing::TestWithParam<Case> {};

TEST_P(GradientCheck, MatchesCentralFiniteDifferences) {
  registerAllPasses();
  const Case &c = GetParam();
  std::mt19937 rng(1234);
  auto forward = withLoss(c, rng);
  ASSERT_TRUE(forward);
  std::mt19937 rng2(1234);
  auto backward = withLoss(c, rng2);
  PassManager pm;
  ASSERT_FALSE(static_cast<bool>(pm.addPipeline("autodiff{wrt=inputs}")));
  auto err = pm.run(*backward);
  ASSERT_FALSE(static_cast<bool>(err)) << llvm::toString(std::move(err));

  std::uniform_real_distribution<double> mag(0.3, 1.5);
  std::vector<Tensor> inputs;
  for (const Value *in : forward->inputs()) {
    std::vector<double> v(static_cast<size_t>(in->type().numel()));
    for (double &x : v)
      x = mag(rng) * (c.positive || rng() % 2 ? 1.0 : -1.0);
    inputs.push_back(Tensor::fromDoubles(DType::F64, in->type().shape, v));
  }
  std::vector<Tensor> results = evaluate(*backward, inputs);
  ASSERT_EQ(results.size(), 1 + inputs.size()) << "one gradient per input";
  const double h = 1e-5;
  for (size_t k = 0; k < inputs.size(); ++k) {
    std::vector<double> x = inputs[k].toDoubles(), grad = results[1 + k].toDoubles();
    ASSERT_EQ(grad.size(), x.size());
    double scale = 1e-3;
    for (double gv : grad)
      scale = std::max(scale, std::fabs(gv));
    for (size_t i = 0; i < x.size(); ++i) {
      auto at = [&](double delta) {
        std::vector<double> p = x;
        p[i] += delta;
        std::vector<Tensor> shifted = inputs;
        shifted[k] = Tensor::fromDoubles(DType::F64, inputs[k].shape(), p);
        return evaluate(*forward, shifted)[0].at(0);
      };
      double fd = (at(h) - at(-h)) / (2 * h);
      EXPECT_NEAR(grad[i], fd, 1e-6 * scale) << c.name << ": input " << k << " element " << i;
    }
  }
}

const Case kCases[] = {
    {"add_broadcast", "graph @g(%a: f64[2,3], %b: f64[3]) opset 17 {\n %y = Add(%a, %b) : f64[2,3]\n return %y\n}"},
    {"sub", "graph @g(%a: f64[2,1], %b: f64[1,3]) opset 17 {\n %y = Sub(%a, %b) : f64[2,3]\n return %y\n}"},
    {"mul_broadcast", "graph @g(%a: f64[2,1], %b: f64[1,3]) opset 17 {\n %y = Mul(%a, %b) : f64[2,3]\n return %y\n}"},
    {"div", "graph @g(%a: f64[2,3], %b: f64[3]) opset 17 {\n %y = Div(%a, %b) : f64[2,3]\n return %y\n}"},
    {"pow3", "graph @g(%a: f64[5]) opset 17 {\n %e = Constant() {value = dense<f64[]>[3.0]} : f64[]\n"
             " %y = Pow(%a, %e) : f64[5]\n return %y\n}"},
    {"sqrt", "graph @g(%a: f64[5]) opset 17 {\n %y = Sqrt(%a) : f64[5]\n return %y\n}", true},
    {"reciprocal", "graph @g(%a: f64[5]) opset 17 {\n %y = Reciprocal(%a) : f64[5]\n return %y\n}"},
    {"exp", "graph @g(%a: f64[5]) opset 17 {\n %y = Exp(%a) : f64[5]\n return %y\n}"},
    {"log", "graph @g(%a: f64[5]) opset 17 {\n %y = Log(%a) : f64[5]\n return %y\n}", true},
    {"tanh", "graph @g(%a: f64[5]) opset 17 {\n %y = Tanh(%a) : f64[5]\n return %y\n}"},
    {"sigmoid", "graph @g(%a: f64[5]) opset 17 {\n %y = Sigmoid(%a) : f64[5]\n return %y\n}"},
    {"relu", "graph @g(%a: f64[6]) opset 17 {\n %y = Relu(%a) : f64[6]\n return %y\n}"},
    {"erf", "graph @g(%a: f64[5]) opset 17 {\n %y = Erf(%a) : f64[5]\n return %y\n}"},
    {"neg", "graph @g(%a: f64[5]) opset 17 {\n %y = Neg(%a) : f64[5]\n return %y\n}"},
    {"gelu", "graph @g(%a: f64[6]) opset 17 {\n %y = partita.Gelu(%a) : f64[6]\n return %y\n}"},
    {"fast_gelu", "graph @g(%a: f64[6]) opset 17 {\n %y = partita.FastGelu(%a) : f64[6]\n return %y\n}"},
    {"where", "graph @g(%a: f64[2,3], %b: f64[3]) opset 17 {\n"
              " %m = Constant() {value = dense<bool[2,3]>[1, 0, 1, 0, 0, 1]} : bool[2,3]\n"
              " %y = Where(%m, %a, %b) : f64[2,3]\n return %y\n}"},
    {"matmul_batched_weight", "graph @g(%a: f64[2,3,4], %w: f64[4,5]) opset 17 {\n"
                              " %y = MatMul(%a, %w) : f64[2,3,5]\n return %y\n}"},
    {"matmul_batch_broadcast", "graph @g(%a: f64[2,1,3,4], %b: f64[3,4,2]) opset 17 {\n"
                               " %y = MatMul(%a, %b) : f64[2,3,3,2]\n return %y\n}"},
    {"linear", "graph @g(%x: f64[2,3,4], %w: f64[4,5], %b: f64[5]) opset 17 {\n"
               " %y = partita.Linear(%x, %w, %b) : f64[2,3,5]\n return %y\n}"},
    {"softmax_last", "graph @g(%a: f64[2,5]) opset 17 {\n %y = Softmax(%a) {axis = -1} : f64[2,5]\n return %y\n}"},
    {"softmax_axis1", "graph @g(%a: f64[2,3,2]) opset 17 {\n %y = Softmax(%a) {axis = 1} : f64[2,3,2]\n return %y\n}"},
    {"log_softmax", "graph @g(%a: f64[2,5]) opset 17 {\n %y = LogSoftmax(%a) {axis = -1} : f64[2,5]\n return %y\n}"},
    {"layernorm", "graph @g(%x: f64[3,6], %s: f64[6], %b: f64[6]) opset 17 {\n"
                  " %y = LayerNormalization(%x, %s, %b) {axis = -1, epsilon = 0.00001} : f64[3,6]\n return %y\n}"},
    {"layernorm_two_axes", "graph @g(%x: f64[2,2,3], %s: f64[2,3]) opset 17 {\n"
                           " %y = LayerNormalization(%x, %s) {axis = 1, epsilon = 0.001} : f64[2,2,3]\n return %y\n}"},
    {"reduce_sum", "graph @g(%a: f64[2,3,4]) opset 17 {\n %ax = Constant() {value = dense<i64[2]>[0, 2]} : i64[2]\n"
                   " %y = ReduceSum(%a, %ax) {keepdims = 0} : f64[3]\n return %y\n}"},
    {"reduce_mean", "graph @g(%a: f64[2,3]) opset 17 {\n %y = ReduceMean(%a) {axes = [-1]} : f64[2,1]\n return %y\n}"},
    {"reduce_max", "graph @g(%a: f64[2,3,4]) opset 17 {\n %y = ReduceMax(%a) {axes = [-1], keepdims = 0} : f64[2,3]\n"
                   " return %y\n}"},
    {"transpose_of_transpose", "graph @g(%a: f64[2,3,4]) opset 17 {\n %t = Transpose(%a) {perm = [0, 2, 1]} : f64[2,4,3]\n"
                               " %y = Transpose(%t) {perm = [2, 1, 0]} : f64[3,4,2]\n return %y\n}"},
    {"gather_axis1_scalar_index", "graph @g(%a: f64[2,3,4]) opset 17 {\n"
                                  " %i = Constant() {value = dense<i64[]>[0]} : i64[]\n"
                                  " %y = Gather(%a, %i) {axis = 1} : f64[2,4]\n return %y\n}"},
    {"gather_axis2_repeats_negative", "graph @g(%a: f64[2,3,4]) opset 17 {\n"
                                      " %i = Constant() {value = dense<i64[3]>[-1, 1, 3]} : i64[3]\n"
                                      " %y = Gather(%a, %i) {axis = 2} : f64[2,3,3]\n return %y\n}"},
    {"conv_patches", "graph @g(%x: f64[2,3,4,6], %w: f64[5,3,2,3], %b: f64[5]) opset 17 {\n"
                     " %y = Conv(%x, %w, %b) {kernel_shape = [2, 3], pads = [0, 0, 0, 0], strides = [2, 3]} : "
                     "f64[2,5,2,2]\n return %y\n}"},
    {"reduce_min_all", "graph @g(%a: f64[2,3]) opset 17 {\n %y = ReduceMin(%a) : f64[1,1]\n return %y\n}"},
    {"reshape_transpose", "graph @g(%a: f64[2,6]) opset 17 {\n %s = Constant() {value = dense<i64[3]>[2, 3, 2]} : i64[3]\n"
                          " %r = Reshape(%a, %s) : f64[2,3,2]\n %y = Transpose(%r) {perm = [2, 0, 1]} : f64[2,2,3]\n"
                          " return %y\n}"},
    {"expand", "graph @g(%a: f64[3,1]) opset 17 {\n %s = Constant() {value = dense<i64[3]>[2, 3, 4]} : i64[3]\n"
               " %y = Expand(%a, %s) : f64[2,3,4]\n return %y\n}"},
    {"split_concat", "graph @g(%a: f64[2,6]) opset 17 {\n"
                     " %p, %q, %r = Split(%a) {axis = 1, split = [1, 2, 3]} : f64[2,1], f64[2,2], f64[2,3]\n"
                     " %y = Concat(%r, %p) {axis = 1} : f64[2,4]\n return %y\n}"},
    {"slice", "graph @g(%a: f64[3,5]) opset 17 {\n %b = Constant() {value = dense<i64[2]>[1, 1]} : i64[2]\n"
              " %e = Constant() {value = dense<i64[2]>[3, 4]} : i64[2]\n %y = Slice(%a, %b, %e) : f64[2,3]\n return %y\n}"},
    {"squeeze_unsqueeze", "graph @g(%a: f64[2,1,3]) opset 17 {\n %ax = Constant() {value = dense<i64[1]>[1]} : i64[1]\n"
                          " %s = Squeeze(%a, %ax) : f64[2,3]\n %z = Constant() {value = dense<i64[1]>[0]} : i64[1]\n"
                          " %y = Unsqueeze(%s, %z) : f64[1,2,3]\n return %y\n}"},
    {"gather_embedding", "graph @g(%w: f64[5,3]) opset 17 {\n"
                         " %ids = Constant() {value = dense<i64[2,3]>[4, 0, 4, 1, 2, 4]} : i64[2,3]\n"
                         " %y = Gather(%w, %ids) : f64[2,3,3]\n return %y\n}"},
    {"chain_reuse", "graph @g(%a: f64[2,3], %w: f64[3,3]) opset 17 {\n %h = MatMul(%a, %w) : f64[2,3]\n"
                    " %t = Tanh(%h) : f64[2,3]\n %y = Mul(%t, %h) : f64[2,3]\n return %y\n}"},
};

INSTANTIATE_TEST_SUITE_P(Rules, GradientCheck, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<Case> &i) { return std::string(i.param.name); });

} // namespace

TEST(Autodiff, OpWithoutRuleIsAnErrorNamingIt) {
  registerAllPasses();
  auto g = parseGraph("graph @g(%a: f64[4]) opset 17 {\n %s = Sin(%a) : f64[4]\n"
                      " %y = ReduceSum(%s) {keepdims = 0} : f64[]\n return %y\n}", "t.pir");
  ASSERT_TRUE(static_cast<bool>(g));
  PassManager pm;
  ASSERT_FALSE(static_cast<bool>(pm.addPipeline("autodiff{wrt=inputs}")));
  EXPECT_EQ(llvm::toString(pm.run(**g)), "autodiff: node '%s' (Sin) has no gradient rule");
}
