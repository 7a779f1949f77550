//===- ElementwiseOps.cpp - unary, binary (broadcasting), Where, Cast -----===//
#include "compiler/ops/Broadcast.h"
#include "compiler/ops/OpRegistry.h"
#include <cmath>

namespace partita {

namespace {

using UnaryFn = double (*)(double);
using BinaryFn = double (*)(double, double);

llvm::Error sameAsInput0(const InferContext &c, std::vector<TensorType> &outs) {
  outs.assign(c.node.numOutputs() ? c.node.numOutputs() : 1, c.type(0));
  // Dropout's optional mask output is boolean.
  for (size_t i = 1; i < outs.size(); ++i)
    outs[i].dtype = DType::Bool;
  return llvm::Error::success();
}

llvm::Error inferBroadcast(const InferContext &c, std::vector<TensorType> &outs, bool toBool) {
  std::vector<Shape> shapes;
  for (size_t i = 0; i < c.types.size(); ++i)
    shapes.push_back(c.type(i).shape);
  auto out = broadcastShapes(shapes);
  if (!out) {
    std::string s;
    for (size_t i = 0; i < shapes.size(); ++i)
      s += (i ? " and " : "") + shapeString(shapes[i]);
    return c.error("shapes " + s + " do not broadcast");
  }
  // Where's value operands are inputs 1 and 2; every other op's type is input 0's.
  // Pow's exponent may have its own type.
  size_t typed = c.node.is("Where") ? 1 : 0;
  for (size_t i = typed + 1; i < c.types.size() && !c.node.is("Pow"); ++i)
    if (c.type(i).dtype != c.type(typed).dtype)
      return c.error("operand types " + dtypeName(c.type(typed).dtype) + " and " +
                     dtypeName(c.type(i).dtype) + " differ");
  outs.push_back(TensorType{toBool ? DType::Bool : c.type(typed).dtype, *out, true});
  return llvm::Error::success();
}

Tensor mapUnary(const Tensor &x, DType outType, UnaryFn fn) {
  std::vector<double> v = x.toDoubles();
  for (double &d : v)
    d = fn(d);
  return Tensor::fromDoubles(outType, x.shape(), v);
}

Tensor mapBroadcast(llvm::ArrayRef<Tensor> in, DType outType,
                    const std::function<double(llvm::ArrayRef<double>)> &fn) {
  std::vector<Shape> shapes;
  for (const auto &t : in)
    shapes.push_back(t.shape());
  Shape outShape = *broadcastShapes(shapes);
  std::vector<BroadcastIndexer> idx;
  for (const auto &t : in)
    idx.emplace_back(t.shape(), outShape);
  int64_t n = numElements(outShape);
  std::vector<double> out(static_cast<size_t>(n));
  llvm::SmallVector<double, 3> args(in.size());
  for (int64_t i = 0; i < n; ++i) {
    for (size_t k = 0; k < in.size(); ++k)
      args[k] = in[k].at(idx[k](i));
    out[i] = fn(args);
  }
  return Tensor::fromDoubles(outType, outShape, out);
}

OpInfo &addUnary(OpRegistry &r, llvm::StringRef op, UnaryFn fn) {
  return r.add(op, OpInfo{sameAsInput0,
                   [fn](const Node &, llvm::ArrayRef<Tensor> in) -> llvm::Expected<std::vector<Tensor>> {
                     return std::vector<Tensor>{mapUnary(in[0], in[0].dtype(), fn)};
                   },
                   1, 1})
      .with(OpTrait::Elementwise);
}

void addBinary(OpRegistry &r, llvm::StringRef op, BinaryFn fn, bool toBool) {
  r.add(op, OpInfo{[toBool](const InferContext &c, std::vector<TensorType> &o) {
                     return inferBroadcast(c, o, toBool);
                   },
                   [fn, toBool](const Node &n, llvm::ArrayRef<Tensor> in)
                       -> llvm::Expected<std::vector<Tensor>> {
                     DType t = toBool ? DType::Bool : in[0].dtype();
                     bool intDiv = n.is("Div") && !isFloat(t);
                     return std::vector<Tensor>{mapBroadcast(in, t, [&](llvm::ArrayRef<double> a) {
                       double v = fn(a[0], a[1]);
                       return intDiv ? std::trunc(v) : v;
                     })};
                   },
                   2, 2})
      .with(OpTrait::Elementwise);
}

/// Max, Min, Sum, Mean: one or more operands, broadcast together.
void addVariadic(OpRegistry &r, llvm::StringRef op, BinaryFn fn, bool average) {
  r.add(op, OpInfo{[](const InferContext &c, std::vector<TensorType> &o) { return inferBroadcast(c, o, false); },
                   [fn, average](const Node &, llvm::ArrayRef<Tensor> in) -> llvm::Expected<std::vector<Tensor>> {
                     return std::vector<Tensor>{mapBroadcast(in, in[0].dtype(), [&](llvm::ArrayRef<double> a) {
                       double acc = a[0];
                       for (size_t k = 1; k < a.size(); ++k)
                         acc = fn(acc, a[k]);
                       return average ? acc / static_cast<double>(a.size()) : acc;
                     })};
                   },
                   1, -1})
      .with(OpTrait::Elementwise);
}

double erfGelu(double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }
double tanhGelu(double x) {
  return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
}

} // namespace

void registerElementwiseOps(OpRegistry &r) {
  addUnary(r, "Neg", [](double x) { return -x; });
  addUnary(r, "Abs", [](double x) { return std::fabs(x); });
  addUnary(r, "Sqrt", [](double x) { return std::sqrt(x); });
  addUnary(r, "Reciprocal", [](double x) { return 1.0 / x; });
  addUnary(r, "Exp", [](double x) { return std::exp(x); });
  addUnary(r, "Log", [](double x) { return std::log(x); });
  addUnary(r, "Erf", [](double x) { return std::erf(x); });
  addUnary(r, "Tanh", [](double x) { return std::tanh(x); });
  addUnary(r, "Sin", [](double x) { return std::sin(x); });
  addUnary(r, "Cos", [](double x) { return std::cos(x); });
  addUnary(r, "Floor", [](double x) { return std::floor(x); });
  addUnary(r, "Ceil", [](double x) { return std::ceil(x); });
  addUnary(r, "Sigmoid", [](double x) { return 1.0 / (1.0 + std::exp(-x)); });
  addUnary(r, "Relu", [](double x) { return x > 0 ? x : 0.0; });
  addUnary(r, "Not", [](double x) { return x != 0 ? 0.0 : 1.0; });
  addUnary(r, "Identity", [](double x) { return x; }).with(OpTrait::View | OpTrait::MovesElements);
  // Canonical GELU ops (the names ONNX Runtime's contrib ops use): Gelu is
  // the exact erf form, FastGelu the tanh approximation.
  addUnary(r, "partita.Gelu", erfGelu).exportedAs(OnnxForm::Function);
  addUnary(r, "partita.FastGelu", tanhGelu).exportedAs(OnnxForm::Function);
  // Inference-mode Dropout is the identity (the canonicalizer removes it).
  r.add("Dropout", OpInfo{sameAsInput0, {}, 1, 3}).with(OpTrait::Elementwise);

  addBinary(r, "Add", [](double a, double b) { return a + b; }, false);
  addBinary(r, "Sub", [](double a, double b) { return a - b; }, false);
  addBinary(r, "Mul", [](double a, double b) { return a * b; }, false);
  addBinary(r, "Div", [](double a, double b) { return a / b; }, false);
  addBinary(r, "Pow", [](double a, double b) { return std::pow(a, b); }, false);
  addVariadic(r, "Max", [](double a, double b) { return std::max(a, b); }, false);
  addVariadic(r, "Min", [](double a, double b) { return std::min(a, b); }, false);
  addVariadic(r, "Sum", [](double a, double b) { return a + b; }, false);
  addVariadic(r, "Mean", [](double a, double b) { return a + b; }, true);
  addBinary(r, "Equal", [](double a, double b) { return a == b ? 1.0 : 0.0; }, true);
  addBinary(r, "Less", [](double a, double b) { return a < b ? 1.0 : 0.0; }, true);
  addBinary(r, "LessOrEqual", [](double a, double b) { return a <= b ? 1.0 : 0.0; }, true);
  addBinary(r, "Greater", [](double a, double b) { return a > b ? 1.0 : 0.0; }, true);
  addBinary(r, "GreaterOrEqual", [](double a, double b) { return a >= b ? 1.0 : 0.0; }, true);
  addBinary(r, "And", [](double a, double b) { return (a != 0 && b != 0) ? 1.0 : 0.0; }, true);
  addBinary(r, "Or", [](double a, double b) { return (a != 0 || b != 0) ? 1.0 : 0.0; }, true);

  r.add("Where",
        OpInfo{[](const InferContext &c, std::vector<TensorType> &o) -> llvm::Error {
                 if (c.type(0).dtype != DType::Bool)
                   return c.error("condition must be bool, got " + dtypeName(c.type(0).dtype));
                 return inferBroadcast(c, o, false);
               },
               [](const Node &, llvm::ArrayRef<Tensor> in) -> llvm::Expected<std::vector<Tensor>> {
                 return std::vector<Tensor>{mapBroadcast(
                     in, in[1].dtype(), [](llvm::ArrayRef<double> a) { return a[0] != 0 ? a[1] : a[2]; })};
               },
               3, 3})
      .with(OpTrait::Elementwise);

  r.add("Cast",
        OpInfo{[](const InferContext &c, std::vector<TensorType> &o) -> llvm::Error {
                 auto to = dtypeFromOnnx(static_cast<int>(c.node.intAttr("to", 0)));
                 if (!to)
                   return c.error("unsupported target type " +
                                  onnxDTypeName(static_cast<int>(c.node.intAttr("to", 0))));
                 o.push_back(TensorType{*to, c.type(0).shape, true});
                 return llvm::Error::success();
               },
               [](const Node &n, llvm::ArrayRef<Tensor> in) -> llvm::Expected<std::vector<Tensor>> {
                 DType to = *dtypeFromOnnx(static_cast<int>(n.intAttr("to", 1)));
                 if (!isFloat(to) && !isFloat(in[0].dtype()))
                   return std::vector<Tensor>{Tensor::fromInts(to, in[0].shape(), in[0].toInts())};
                 return std::vector<Tensor>{Tensor::fromDoubles(to, in[0].shape(), in[0].toDoubles())};
               },
               1, 1})
      .with(OpTrait::Elementwise);
}

} // namespace partita
