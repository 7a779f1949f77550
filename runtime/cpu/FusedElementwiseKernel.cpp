//===- FusedElementwiseKernel.cpp - an elementwise cluster in one pass -----===//
//
// Runs a cluster (runtime/executor/ElementwiseClusters.h) tile by tile: each
// tile of up to kTile elements of the common output shape is loaded from the
// cluster's inputs (broadcast as numpy does), every node's result is computed
// into a small register array that stays in L1, and only the values read
// outside the cluster are stored. Each op's loop over a tile is the same
// vectorizable arithmetic as its standalone kernel (ElementwiseKernels.cpp),
// so fusing changes no result. bool values live as 0/1 floats inside, bf16
// and fp16 ones (mixed precision's round trips) as the floats they widen to:
// a Cast to the half type rounds in the register (Round), one back copies.
//===----------------------------------------------------------------------===//
#include "compiler/ops/Broadcast.h"
#include "runtime/cpu/CpuKernels.h"
#include "runtime/cpu/FastMath.h"
#include "runtime/core/HalfConvert.h"
#include "runtime/cpu/Parallel.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringSwitch.h"
#include <cmath>

namespace partita::rt::cpu {

namespace {

constexpr int64_t kTile = 128;

enum class Op {
  Neg, Abs, Sqrt, Reciprocal, Exp, Log, Tanh, Sigmoid, Relu, Erf, Gelu, FastGelu, Not, Copy, ToBool, // unary
  RoundBf16, RoundF16,
  Add, Sub, Mul, Div, Max, Min, Pow, Equal,                                                  // binary
  Where,                                                                                     // ternary
  Unknown
};

Op opOf(const Node &n) {
  return llvm::StringSwitch<Op>(n.qualifiedOp())
      .Case("Neg", Op::Neg).Case("Abs", Op::Abs).Case("Sqrt", Op::Sqrt).Case("Reciprocal", Op::Reciprocal)
      .Case("Exp", Op::Exp).Case("Log", Op::Log).Case("Tanh", Op::Tanh).Case("Sigmoid", Op::Sigmoid)
      .Case("Relu", Op::Relu).Case("Erf", Op::Erf).Case("partita.Gelu", Op::Gelu)
      .Case("partita.FastGelu", Op::FastGelu).Case("Not", Op::Not).Case("Cast", Op::Copy)
      .Case("Expand", Op::Copy).Case("Add", Op::Add).Case("Sub", Op::Sub).Case("Mul", Op::Mul)
      .Case("Div", Op::Div).Case("Max", Op::Max).Case("Min", Op::Min).Case("Pow", Op::Pow)
      .Case("Equal", Op::Equal).Case("Where", Op::Where).Default(Op::Unknown);
}

bool isFloatOrBool(DType t) { return t == DType::F32 || t == DType::Bool; }

/// A Cast between float32 and bf16 or fp16.
bool isHalfCast(const Node &n) {
  if (!n.is("Cast") || n.numInputs() != 1 || !n.input(0) || n.numOutputs() != 1)
    return false;
  DType from = n.input(0)->type().dtype, to = n.output()->type().dtype;
  return (from == DType::F32 && isHalfFloat(to)) || (isHalfFloat(from) && to == DType::F32);
}

/// The ops this kernel runs, on f32 and bool values (Cast between them, or
/// between f32 and a half type; Expand only with its constant target shape).
bool fusible(const Node &n) {
  if (isHalfCast(n))
    return true;
  Op op = opOf(n);
  if (op == Op::Unknown || n.numOutputs() != 1 || !isFloatOrBool(n.output()->type().dtype))
    return false;
  size_t operands = op == Op::Where ? 3 : op >= Op::Add ? 2 : 1;
  if (n.numInputs() != operands && !(n.is("Expand") && n.numInputs() == 2))
    return false;
  for (size_t i = 0; i < operands; ++i)
    if (!n.input(i) || !isFloatOrBool(n.input(i)->type().dtype))
      return false;
  if (n.is("Expand") && !constantValue(n.input(1)))
    return false;
  return true;
}

struct Instr {
  Op op;
  int in[3] = {-1, -1, -1}; // register ids
  int out = -1;
};

struct InputLoad {
  int reg;
  DType dtype;
  BroadcastIndexer index;
  int64_t step; // 0 or 1 along a tile
};

struct Store {
  int reg;
  DType dtype;
};

class FusedElementwiseKernel final : public Kernel {
public:
  static llvm::Expected<std::unique_ptr<Kernel>> create(const ElementwiseCluster &c) {
    auto k = std::unique_ptr<FusedElementwiseKernel>(new FusedElementwiseKernel());
    k->shape_ = c.nodes.back()->output()->type().shape;
    k->row_ = k->shape_.empty() ? 1 : k->shape_.back();
    llvm::DenseMap<const Value *, int> reg;
    int next = 0;
    // A row is the unit of broadcasting; short rows of inputs that are all
    // either full-shape or single values are walked as one flat array.
    bool flat = true;
    for (const Value *in : c.inputs)
      flat &= in->type().shape == k->shape_ || in->type().numel() == 1 || in->type().dtype == DType::I64;
    if (flat)
      k->row_ = std::max<int64_t>(1, numElements(k->shape_));
    for (size_t i = 0; i < c.inputs.size(); ++i) {
      const Value *in = c.inputs[i];
      if (in->type().dtype == DType::I64) // Expand's shape operand
        continue;
      reg[in] = next;
      const Shape &s = in->type().shape;
      // Along a tile an input advances by one element, or stays (broadcast).
      int64_t step = flat ? s == k->shape_ : !s.empty() && s.back() == k->row_ && k->row_ != 1;
      k->loads_.push_back({next++, in->type().dtype, BroadcastIndexer(s, k->shape_), step});
      k->loadInput_.push_back(i);
    }
    for (const Node *n : c.nodes) {
      Instr ins;
      ins.op = opOf(*n);
      size_t operands = ins.op == Op::Where ? 3 : ins.op >= Op::Add ? 2 : 1;
      for (size_t i = 0; i < operands; ++i) {
        auto it = reg.find(n->input(i));
        if (it == reg.end())
          return kernelError(*n, "fused elementwise: operand " + llvm::Twine(i) + " has no register");
        ins.in[i] = it->second;
      }
      if (n->is("Cast") && n->output()->type().dtype == DType::Bool && n->input(0)->type().dtype != DType::Bool)
        ins.op = Op::ToBool;
      if (n->is("Cast") && isHalfFloat(n->output()->type().dtype)) // held as the float it rounds to
        ins.op = n->output()->type().dtype == DType::BF16 ? Op::RoundBf16 : Op::RoundF16;
      ins.out = next;
      reg[n->output()] = next++;
      k->code_.push_back(ins);
    }
    for (const Value *out : c.outputs)
      k->stores_.push_back({reg.lookup(out), out->type().dtype});
    k->numRegs_ = next;
    return std::unique_ptr<Kernel>(std::move(k));
  }

  llvm::Error run(KernelContext &ctx) override {
    int64_t total = numElements(shape_), row = row_, rows = row ? total / row : 0;
    int64_t tilesPerRow = (row + kTile - 1) / kTile, tiles = rows * tilesPerRow;
    parallelFor(tiles, std::max<int64_t>(1, (int64_t{1} << 15) / kTile), [&](int64_t t0, int64_t t1) {
      std::vector<float> regs(static_cast<size_t>(numRegs_) * kTile);
      for (int64_t t = t0; t < t1; ++t) {
        int64_t r = t / tilesPerRow, c0 = (t % tilesPerRow) * kTile, len = std::min(kTile, row - c0);
        int64_t first = r * row + c0; // flat output index of the tile's first element
        for (size_t i = 0; i < loads_.size(); ++i)
          load(loads_[i], ctx.inputs[loadInput_[i]], first, len, &regs[loads_[i].reg * kTile]);
        for (const Instr &ins : code_)
          exec(ins, regs.data(), len);
        for (size_t i = 0; i < stores_.size(); ++i)
          store(stores_[i], &regs[stores_[i].reg * kTile], ctx.outputs[i], first, len);
      }
    });
    return llvm::Error::success();
  }

private:
  FusedElementwiseKernel() = default;

  static void load(const InputLoad &l, const TensorView &v, int64_t first, int64_t len, float *dst) {
    int64_t base = l.index(first);
    if (l.dtype == DType::F32) {
      const float *src = v.as<float>() + base;
      if (l.step)
        for (int64_t i = 0; i < len; ++i)
          dst[i] = src[i];
      else
        for (int64_t i = 0; i < len; ++i)
          dst[i] = src[0];
    } else if (isHalfFloat(l.dtype)) {
      const uint16_t *src = v.as<uint16_t>() + base;
      if (l.step)
        return widenHalfRow(l.dtype, src, dst, 0, len);
      widenHalfRow(l.dtype, src, dst, 0, 1);
      for (int64_t i = 1; i < len; ++i)
        dst[i] = dst[0];
    } else {
      const uint8_t *src = v.as<uint8_t>() + base;
      for (int64_t i = 0; i < len; ++i)
        dst[i] = src[i * l.step] ? 1.0f : 0.0f;
    }
  }

  static void store(const Store &s, const float *src, TensorView &v, int64_t first, int64_t len) {
    if (s.dtype == DType::F32) {
      float *dst = v.as<float>() + first;
      for (int64_t i = 0; i < len; ++i)
        dst[i] = src[i];
    } else if (isHalfFloat(s.dtype)) { // the value was rounded in its register: exact
      roundToHalfRow(s.dtype, src, v.as<uint16_t>() + first, 0, len);
    } else {
      uint8_t *dst = v.as<uint8_t>() + first;
      for (int64_t i = 0; i < len; ++i)
        dst[i] = src[i] != 0.0f;
    }
  }

  void exec(const Instr &ins, float *regs, int64_t len) const {
    const float *a = regs + ins.in[0] * kTile;
    const float *b = ins.in[1] >= 0 ? regs + ins.in[1] * kTile : nullptr;
    const float *c = ins.in[2] >= 0 ? regs + ins.in[2] * kTile : nullptr;
    float *y = regs + ins.out * kTile;
#define UNARY(expr)                                                                                                    \
  for (int64_t i = 0; i < len; ++i) {                                                                                  \
    float x = a[i];                                                                                                    \
    y[i] = (expr);                                                                                                     \
  }                                                                                                                    \
  return;
#define BINARY(expr)                                                                                                   \
  for (int64_t i = 0; i < len; ++i) {                                                                                  \
    float x = a[i], z = b[i];                                                                                          \
    y[i] = (expr);                                                                                                     \
  }                                                                                                                    \
  return;
    switch (ins.op) {
    case Op::Neg: UNARY(-x)
    case Op::Abs: UNARY(std::fabs(x))
    case Op::Sqrt: UNARY(std::sqrt(x))
    case Op::Reciprocal: UNARY(1.0f / x)
    case Op::Exp: UNARY(fastExp(x))
    case Op::Log: UNARY(std::log(x))
    case Op::Tanh: UNARY(fastTanh(x))
    case Op::Sigmoid: UNARY(sigmoid(x))
    case Op::Relu: UNARY(relu(x))
    case Op::Erf: UNARY(std::erf(x))
    case Op::Gelu: UNARY(geluErf(x))
    case Op::FastGelu: UNARY(geluTanh(x))
    case Op::Not: UNARY(x != 0.0f ? 0.0f : 1.0f)
    case Op::Copy: UNARY(x)
    case Op::ToBool: UNARY(x != 0.0f ? 1.0f : 0.0f)
    case Op::RoundBf16: UNARY(bf16ToFloat(floatToBf16(x)))
    case Op::RoundF16: {
      uint16_t h[kTile];
      roundToHalfRow(DType::F16, a, h, 0, len);
      widenHalfRow(DType::F16, h, y, 0, len);
      return;
    }
    case Op::Add: BINARY(x + z)
    case Op::Sub: BINARY(x - z)
    case Op::Mul: BINARY(x * z)
    case Op::Div: BINARY(x / z)
    case Op::Max: BINARY(std::max(x, z))
    case Op::Min: BINARY(std::min(x, z))
    case Op::Pow: BINARY(power(x, z))
    case Op::Equal: BINARY(x == z ? 1.0f : 0.0f)
    case Op::Where:
      for (int64_t i = 0; i < len; ++i)
        y[i] = a[i] != 0.0f ? b[i] : c[i];
      return;
    case Op::Unknown: return;
    }
#undef UNARY
#undef BINARY
  }

  Shape shape_;
  int64_t row_ = 1;
  std::vector<InputLoad> loads_;
  std::vector<size_t> loadInput_; // the cluster input each load reads (i64 ones are skipped)
  std::vector<Instr> code_;
  std::vector<Store> stores_;
  int numRegs_ = 0;
};

} // namespace

void registerFusedElementwiseKernel(KernelRegistry &r) {
  r.setClusterFusion(kCpuDevice, ClusterFusion{fusible, [](const ElementwiseCluster &c) {
                                                      return FusedElementwiseKernel::create(c);
                                                    }});
}

} // namespace partita::rt::cpu
