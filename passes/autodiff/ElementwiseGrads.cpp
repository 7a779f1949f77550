//===- ElementwiseGrads.cpp - gradients of elementwise ops ----------------===//
//
// Broadcast operands get their gradient summed back to their shape (sumTo).
//===----------------------------------------------------------------------===//
#include "passes/PatternMatch.h"
#include "passes/autodiff/GradBuilder.h"
#include <cmath>

namespace partita {

namespace {

using B = GradBuilder;
using Ins = std::vector<Value *>;

Value *in(const Node &n, size_t i) { return n.input(i); }
Value *out(const Node &n) { return n.output(); }
DType dt(const Node &n) { return n.output()->type().dtype; }

void unary(GradFn &f, std::function<Value *(B &, const Node &, Value *)> local) {
  f = [local](B &b, const Node &n, llvm::ArrayRef<Value *> dOut, Ins &dIn) -> llvm::Error {
    if (dOut[0])
      dIn[0] = local(b, n, dOut[0]);
    return llvm::Error::success();
  };
}

} // namespace

void addElementwiseGrads(std::map<std::string, GradFn> &t) {
  auto sum0 = [](B &b, const Node &n, Value *g) { return b.sumTo(g, in(n, 0)->type().shape); };
  auto sum1 = [](B &b, const Node &n, Value *g) { return b.sumTo(g, in(n, 1)->type().shape); };
  t["Add"] = [=](B &b, const Node &n, llvm::ArrayRef<Value *> d, Ins &dIn) -> llvm::Error {
    dIn[0] = sum0(b, n, d[0]);
    dIn[1] = sum1(b, n, d[0]);
    return llvm::Error::success();
  };
  t["Sub"] = [=](B &b, const Node &n, llvm::ArrayRef<Value *> d, Ins &dIn) -> llvm::Error {
    dIn[0] = sum0(b, n, d[0]);
    dIn[1] = sum1(b, n, b.op("Neg", {d[0]}));
    return llvm::Error::success();
  };
  t["Mul"] = [=](B &b, const Node &n, llvm::ArrayRef<Value *> d, Ins &dIn) -> llvm::Error {
    dIn[0] = sum0(b, n, b.op("Mul", {d[0], in(n, 1)}));
    dIn[1] = sum1(b, n, b.op("Mul", {d[0], in(n, 0)}));
    return llvm::Error::success();
  };
  t["Div"] = [=](B &b, const Node &n, llvm::ArrayRef<Value *> d, Ins &dIn) -> llvm::Error {
    dIn[0] = sum0(b, n, b.op("Div", {d[0], in(n, 1)}));
    // d(a/b)/db = -(a/b)/b
    dIn[1] = sum1(b, n, b.op("Neg", {b.op("Div", {b.op("Mul", {d[0], out(n)}), in(n, 1)})}));
    return llvm::Error::success();
  };
  t["Pow"] = [=](B &b, const Node &n, llvm::ArrayRef<Value *> d, Ins &dIn) -> llvm::Error {
    auto e = scalarConstant(in(n, 1));
    if (!e)
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "autodiff: node " + n.describe() + ": only a constant scalar exponent is supported");
    Value *pw = b.op("Pow", {in(n, 0), b.scalar(*e - 1, dt(n))});
    dIn[0] = b.op("Mul", {d[0], b.op("Mul", {pw, b.scalar(*e, dt(n))})});
    return llvm::Error::success();
  };
  t["Where"] = [=](B &b, const Node &n, llvm::ArrayRef<Value *> d, Ins &dIn) -> llvm::Error {
    Value *zero = b.scalar(0.0, dt(n));
    dIn[1] = b.sumTo(b.op("Where", {in(n, 0), d[0], zero}), in(n, 1)->type().shape);
    dIn[2] = b.sumTo(b.op("Where", {in(n, 0), zero, d[0]}), in(n, 2)->type().shape);
    return llvm::Error::success();
  };
  auto same = [](B &, const Node &, Value *g) { return g; };
  unary(t["Identity"], same);
  unary(t["Dropout"], same);
  unary(t["Cast"], [](B &b, const Node &n, Value *g) {
    return b.op("Cast", {g}, {{"to", Attribute::ofInt(dtypeToOnnx(in(n, 0)->type().dtype))}});
  });
  unary(t["Neg"], [](B &b, const Node &, Value *g) { return b.op("Neg", {g}); });
  unary(t["Sqrt"], [](B &b, const Node &n, Value *g) {
    return b.op("Div", {g, b.op("Mul", {out(n), b.scalar(2.0, dt(n))})});
  });
  unary(t["Reciprocal"], [](B &b, const Node &n, Value *g) {
    return b.op("Neg", {b.op("Mul", {g, b.op("Mul", {out(n), out(n)})})});
  });
  unary(t["Exp"], [](B &b, const Node &n, Value *g) { return b.op("Mul", {g, out(n)}); });
  unary(t["Log"], [](B &b, const Node &n, Value *g) { return b.op("Div", {g, in(n, 0)}); });
  unary(t["Tanh"], [](B &b, const Node &n, Value *g) {
    return b.op("Mul", {g, b.op("Sub", {b.scalar(1.0, dt(n)), b.op("Mul", {out(n), out(n)})})});
  });
  unary(t["Sigmoid"], [](B &b, const Node &n, Value *g) {
    return b.op("Mul", {g, b.op("Mul", {out(n), b.op("Sub", {b.scalar(1.0, dt(n)), out(n)})})});
  });
  unary(t["Relu"], [](B &b, const Node &n, Value *g) {
    Value *pos = b.op("Greater", {in(n, 0), b.scalar(0.0, dt(n))});
    return b.op("Where", {pos, g, b.scalar(0.0, dt(n))});
  });
  unary(t["Erf"], [](B &b, const Node &n, Value *g) { // 2/sqrt(pi) exp(-x^2)
    Value *x = in(n, 0);
    Value *e = b.op("Exp", {b.op("Neg", {b.op("Mul", {x, x})})});
    return b.op("Mul", {g, b.op("Mul", {e, b.scalar(2.0 / std::sqrt(M_PI), dt(n))})});
  });
  unary(t["partita.Gelu"], [](B &b, const Node &n, Value *g) { // Phi(x) + x phi(x)
    Value *x = in(n, 0);
    Value *cdf = b.op("Mul", {b.op("Add", {b.op("Erf", {b.op("Mul", {x, b.scalar(M_SQRT1_2, dt(n))})}),
                                          b.scalar(1.0, dt(n))}),
                              b.scalar(0.5, dt(n))});
    Value *pdf = b.op("Mul", {b.op("Exp", {b.op("Mul", {b.op("Mul", {x, x}), b.scalar(-0.5, dt(n))})}),
                              b.scalar(1.0 / std::sqrt(2 * M_PI), dt(n))});
    return b.op("Mul", {g, b.op("Add", {cdf, b.op("Mul", {x, pdf})})});
  });
  unary(t["partita.FastGelu"], [](B &b, const Node &n, Value *g) {
    // y = 0.5 x (1 + tanh(u)), u = k0 (x + k1 x^3):
    // dy/dx = 0.5 (1 + t) + 0.5 x (1 - t^2) k0 (1 + 3 k1 x^2)
    const double k0 = std::sqrt(2.0 / M_PI), k1 = 0.044715;
    DType d = dt(n);
    Value *x = in(n, 0), *x2 = b.op("Mul", {x, x});
    Value *u = b.op("Mul", {b.op("Add", {x, b.op("Mul", {b.op("Mul", {x2, x}), b.scalar(k1, d)})}), b.scalar(k0, d)});
    Value *th = b.op("Tanh", {u});
    Value *left = b.op("Mul", {b.op("Add", {th, b.scalar(1.0, d)}), b.scalar(0.5, d)});
    Value *sech2 = b.op("Sub", {b.scalar(1.0, d), b.op("Mul", {th, th})});
    Value *du = b.op("Mul", {b.op("Add", {b.op("Mul", {x2, b.scalar(3 * k1, d)}), b.scalar(1.0, d)}), b.scalar(k0, d)});
    Value *right = b.op("Mul", {b.op("Mul", {b.op("Mul", {x, b.scalar(0.5, d)}), sech2}), du});
    return b.op("Mul", {g, b.op("Add", {left, right})});
  });
}

} // namespace partita
