//===- ElementwiseKernels.cpp - f32 unary, binary, Where, GELU ------------===//
#include "compiler/ops/Broadcast.h"
#include "runtime/cpu/CpuKernels.h"
#include "runtime/cpu/FastMath.h"
#include "runtime/core/HalfConvert.h"
#include "runtime/cpu/Parallel.h"
#include <cmath>
#include <type_traits>

namespace partita::rt::cpu {

namespace {

constexpr int64_t kGrain = 1 << 14;

// ---- unary -------------------------------------------------------------------
template <typename F> class UnaryKernel final : public Kernel {
public:
  explicit UnaryKernel(F f) : f_(f) {}
  llvm::Error run(KernelContext &ctx) override {
    const float *x = ctx.inputs[0].as<float>();
    float *y = ctx.outputs[0].as<float>();
    F f = f_;
    parallelFor(ctx.outputs[0].numel(), kGrain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i)
        y[i] = f(x[i]);
    });
    return llvm::Error::success();
  }

private:
  F f_;
};

template <typename F> void addUnary(KernelRegistry &r, llvm::StringRef op, F f) {
  r.add(op, kCpuDevice, [f](const Node &n) -> llvm::Expected<std::unique_ptr<Kernel>> {
    if (!allOfType(n, DType::F32))
      return makeFallbackKernel(n);
    return std::unique_ptr<Kernel>(new UnaryKernel<F>(f));
  });
}


// ---- binary with broadcasting ------------------------------------------------
/// Broadcast access pattern: the output is walked row by row (last dim); each
/// operand advances by 0 or 1 along a row and starts at an offset given by the
/// indexer of the row's first element.
struct RowBroadcast {
  Shape out;
  int64_t rowLen = 1;
  std::vector<BroadcastIndexer> idx;
  std::vector<int64_t> step; // 0 or 1 per operand along the row
  std::vector<bool> contiguousSame;

  RowBroadcast(const std::vector<Shape> &ins, const Shape &outShape) : out(outShape) {
    rowLen = out.empty() ? 1 : out.back();
    for (const auto &s : ins) {
      idx.emplace_back(s, out);
      step.push_back(!s.empty() && s.back() == rowLen && rowLen != 1 ? 1 : 0);
      contiguousSame.push_back(s == out);
    }
  }
  int64_t rows() const { return rowLen ? numElements(out) / rowLen : 0; }
};

template <typename F> class BinaryKernel final : public Kernel {
public:
  BinaryKernel(F f, Shape a, Shape b, Shape out) : f_(f), plan_({a, b}, out) {}
  llvm::Error run(KernelContext &ctx) override {
    const float *a = ctx.inputs[0].as<float>(), *b = ctx.inputs[1].as<float>();
    float *y = ctx.outputs[0].as<float>();
    F f = f_;
    int64_t n = ctx.outputs[0].numel();
    if (plan_.contiguousSame[0] && plan_.contiguousSame[1]) {
      parallelFor(n, kGrain, [&](int64_t s, int64_t e) {
        for (int64_t i = s; i < e; ++i)
          y[i] = f(a[i], b[i]);
      });
      return llvm::Error::success();
    }
    int64_t len = plan_.rowLen, sa = plan_.step[0], sb = plan_.step[1];
    parallelFor(plan_.rows(), std::max<int64_t>(1, kGrain / std::max<int64_t>(len, 1)), [&](int64_t s, int64_t e) {
      for (int64_t r = s; r < e; ++r) {
        const float *pa = a + plan_.idx[0](r * len), *pb = b + plan_.idx[1](r * len);
        float *py = y + r * len;
        for (int64_t i = 0; i < len; ++i)
          py[i] = f(pa[i * sa], pb[i * sb]);
      }
    });
    return llvm::Error::success();
  }

private:
  F f_;
  RowBroadcast plan_;
};

template <typename F> void addBinary(KernelRegistry &r, llvm::StringRef op, F f) {
  r.add(op, kCpuDevice, [f](const Node &n) -> llvm::Expected<std::unique_ptr<Kernel>> {
    if (!allOfType(n, DType::F32) || n.numInputs() != 2)
      return makeFallbackKernel(n);
    return std::unique_ptr<Kernel>(
        new BinaryKernel<F>(f, n.input(0)->type().shape, n.input(1)->type().shape, n.output()->type().shape));
  });
}

/// Equal on integer operands (token ids against a range of classes: the
/// loss's one-hot) with broadcasting, into bool.
template <typename T> class IntEqualKernel final : public Kernel {
public:
  explicit IntEqualKernel(const Node &n)
      : plan_({n.input(0)->type().shape, n.input(1)->type().shape}, n.output()->type().shape) {}
  llvm::Error run(KernelContext &ctx) override {
    const T *a = ctx.inputs[0].as<T>(), *b = ctx.inputs[1].as<T>();
    uint8_t *y = ctx.outputs[0].as<uint8_t>();
    int64_t len = plan_.rowLen, sa = plan_.step[0], sb = plan_.step[1];
    parallelFor(plan_.rows(), std::max<int64_t>(1, kGrain / std::max<int64_t>(len, 1)), [&](int64_t s, int64_t e) {
      for (int64_t r = s; r < e; ++r) {
        const T *pa = a + plan_.idx[0](r * len), *pb = b + plan_.idx[1](r * len);
        uint8_t *py = y + r * len;
        if (sa == 0 && sb == 1) // one id against a row of classes: vectorizes
          for (int64_t i = 0; i < len; ++i)
            py[i] = pa[0] == pb[i];
        else
          for (int64_t i = 0; i < len; ++i)
            py[i] = pa[i * sa] == pb[i * sb];
      }
    });
    return llvm::Error::success();
  }

private:
  RowBroadcast plan_;
};

/// Cast between bool, int32, int64, float32 and float64 (ONNX semantics:
/// to bool is "not zero"; float to int truncates toward zero).
template <typename From, typename To> class CastKernel final : public Kernel {
public:
  llvm::Error run(KernelContext &ctx) override {
    const From *x = ctx.inputs[0].as<From>();
    To *y = ctx.outputs[0].as<To>();
    parallelFor(ctx.outputs[0].numel(), kGrain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        if constexpr (std::is_same_v<To, bool>)
          y[i] = x[i] != From(0);
        else
          y[i] = static_cast<To>(x[i]);
      }
    });
    return llvm::Error::success();
  }
};

/// Cast between float32 and a 16-bit float (bf16, fp16), rounding to nearest
/// even (mixed precision rounds every activation through one).
class HalfCastKernel final : public Kernel {
public:
  HalfCastKernel(DType from, DType to) : from_(from), to_(to) {}
  llvm::Error run(KernelContext &ctx) override {
    int64_t n = ctx.outputs[0].numel();
    if (from_ == DType::F32) {
      const float *x = ctx.inputs[0].as<float>();
      uint16_t *y = ctx.outputs[0].as<uint16_t>();
      parallelFor(n, kGrain, [&](int64_t b, int64_t e) { roundToHalfRow(to_, x, y, b, e); });
    } else {
      const uint16_t *x = ctx.inputs[0].as<uint16_t>();
      float *y = ctx.outputs[0].as<float>();
      parallelFor(n, kGrain, [&](int64_t b, int64_t e) { widenHalfRow(from_, x, y, b, e); });
    }
    return llvm::Error::success();
  }

private:
  DType from_, to_;
};

template <typename From> std::unique_ptr<Kernel> castFrom(DType to) {
  switch (to) {
  case DType::F32: return std::make_unique<CastKernel<From, float>>();
  case DType::F64: return std::make_unique<CastKernel<From, double>>();
  case DType::I64: return std::make_unique<CastKernel<From, int64_t>>();
  case DType::I32: return std::make_unique<CastKernel<From, int32_t>>();
  case DType::Bool: return std::make_unique<CastKernel<From, bool>>();
  default: return nullptr;
  }
}

std::unique_ptr<Kernel> makeCast(DType from, DType to) {
  if ((from == DType::F32 && isHalfFloat(to)) || (isHalfFloat(from) && to == DType::F32))
    return std::make_unique<HalfCastKernel>(from, to);
  switch (from) {
  case DType::F32: return castFrom<float>(to);
  case DType::F64: return castFrom<double>(to);
  case DType::I64: return castFrom<int64_t>(to);
  case DType::I32: return castFrom<int32_t>(to);
  case DType::Bool: return castFrom<bool>(to);
  default: return nullptr;
  }
}

class WhereKernel final : public Kernel {
public:
  WhereKernel(const Node &n)
      : plan_({n.input(0)->type().shape, n.input(1)->type().shape, n.input(2)->type().shape},
              n.output()->type().shape) {}
  llvm::Error run(KernelContext &ctx) override {
    const uint8_t *c = ctx.inputs[0].as<uint8_t>();
    const float *x = ctx.inputs[1].as<float>(), *z = ctx.inputs[2].as<float>();
    float *y = ctx.outputs[0].as<float>();
    int64_t len = plan_.rowLen, sc = plan_.step[0], sx = plan_.step[1], sz = plan_.step[2];
    parallelFor(plan_.rows(), std::max<int64_t>(1, kGrain / std::max<int64_t>(len, 1)), [&](int64_t s, int64_t e) {
      for (int64_t r = s; r < e; ++r) {
        const uint8_t *pc = c + plan_.idx[0](r * len);
        const float *px = x + plan_.idx[1](r * len), *pz = z + plan_.idx[2](r * len);
        float *py = y + r * len;
        for (int64_t i = 0; i < len; ++i)
          py[i] = pc[i * sc] ? px[i * sx] : pz[i * sz];
      }
    });
    return llvm::Error::success();
  }

private:
  RowBroadcast plan_;
};

} // namespace

void registerElementwiseKernels(KernelRegistry &r) {
  // The ops' math is every device's (runtime/kernels/ElementMath.h); the
  // lambdas inline into the loops (a function pointer would not).
#define PARTITA_CPU_UNARY(name, id, expr) addUnary(r, name, [](float x) { return expr; });
#define PARTITA_CPU_BINARY(name, id, expr) addBinary(r, name, [](float a, float b) { return expr; });
  PARTITA_UNARY_OPS(PARTITA_CPU_UNARY)
  PARTITA_BINARY_OPS(PARTITA_CPU_BINARY)
#undef PARTITA_CPU_UNARY
#undef PARTITA_CPU_BINARY
  r.add("Cast", kCpuDevice, [](const Node &n) -> llvm::Expected<std::unique_ptr<Kernel>> {
    DType from = n.input(0)->type().dtype, to = n.output()->type().dtype;
    // Float-to-integer casts of out-of-range values are left to the reference.
    bool floatToInt = (from == DType::F32 || from == DType::F64) && (to == DType::I64 || to == DType::I32);
    if (auto k = floatToInt ? nullptr : makeCast(from, to))
      return std::move(k);
    return makeFallbackKernel(n);
  });
  r.add("Equal", kCpuDevice, [](const Node &n) -> llvm::Expected<std::unique_ptr<Kernel>> {
    DType t = n.input(0)->type().dtype;
    if (n.input(1)->type().dtype == t && t == DType::I64)
      return std::unique_ptr<Kernel>(new IntEqualKernel<int64_t>(n));
    if (n.input(1)->type().dtype == t && t == DType::I32)
      return std::unique_ptr<Kernel>(new IntEqualKernel<int32_t>(n));
    return makeFallbackKernel(n);
  });
  r.add("Where", kCpuDevice, [](const Node &n) -> llvm::Expected<std::unique_ptr<Kernel>> {
    if (n.output()->type().dtype != DType::F32)
      return makeFallbackKernel(n);
    return std::unique_ptr<Kernel>(new WhereKernel(n));
  });
}

} // namespace partita::rt::cpu
