//===- GemmKernels.cpp - MatMul, partita.Linear, Gemm on oneDNN matmul ----===//
//
// One oneDNN matmul primitive per node, created at load for the node's static
// shapes: numpy batch broadcasting maps onto oneDNN's broadcast batch dims,
// Gemm's transposes onto strides, Linear's bias onto the primitive's bias.
//===----------------------------------------------------------------------===//
#include "runtime/cpu/CpuKernels.h"
#include "runtime/cpu/Dnnl.h"
#include "runtime/core/MemoryLedger.h"
#include "compiler/ops/Broadcast.h"
#include "compiler/ops/OpRegistry.h"
#include "llvm/ADT/StringSwitch.h"
#include <algorithm>

namespace partita::rt::cpu {

namespace {

using dims = dnnl::memory::dims;

dnnl::memory::desc plainDesc(const dims &d, const dims &strides,
                             dnnl::memory::data_type t = dnnl::memory::data_type::f32) {
  return dnnl::memory::desc(d, t, strides);
}

dims rowMajorStrides(const dims &d) {
  dims s(d.size(), 1);
  for (int i = static_cast<int>(d.size()) - 2; i >= 0; --i)
    s[i] = s[i + 1] * d[i + 1];
  return s;
}

/// How a matmul reads one operand: the stored tensor's shape, and the
/// permutation a fused Transpose (or Gemm's trans flag) applies to it.
struct Operand {
  Shape stored;
  std::vector<int64_t> perm; // empty: identity
  /// A program constant: it may be reordered once into oneDNN's preferred
  /// blocked layout (refreshed when the program's weights change).
  bool constant = false;
  /// The stored elements' type: f32, or bf16 read through a widening Cast.
  dnnl::memory::data_type type = dnnl::memory::data_type::f32;

  Shape logicalShape() const {
    if (perm.empty())
      return stored;
    Shape s;
    for (int64_t p : perm)
      s.push_back(stored[p]);
    return s;
  }
  dims logicalStrides() const {
    dims rm = rowMajorStrides(dims(stored.begin(), stored.end()));
    if (perm.empty())
      return rm;
    dims st;
    for (int64_t p : perm)
      st.push_back(rm[p]);
    return st;
  }
};

struct MatMulOptions {
  bool hasBias = false;
  float alpha = 1.0f;
  /// Elementwise epilogue fused as a oneDNN post-op (undef: none).
  dnnl::algorithm epilogue = dnnl::algorithm::undef;
  /// A Transpose of the product fused by writing it through strides (empty: none).
  std::vector<int64_t> outPerm;
  /// The node's operands in the other order: A is its input 1, B its input 0.
  bool swapped = false;
};

bool isRowMajor(const dims &d, const dims &st) {
  dims rm = rowMajorStrides(d);
  for (size_t i = 0; i < d.size(); ++i)
    if (d[i] != 1 && st[i] != rm[i])
      return false;
  return true;
}

class MatMulKernel final : public Kernel {
public:
  /// a: [.., M, K], b: [.., K, N] once their permutations are applied; bias [N] optional.
  static llvm::Expected<std::unique_ptr<Kernel>> create(const Node &n, const Operand &a, const Operand &b,
                                                        const MatMulOptions &o) {
    auto k = std::unique_ptr<MatMulKernel>(new MatMulKernel());
    Shape as = a.logicalShape(), bs = b.logicalShape();
    dims ast = a.logicalStrides(), bst = b.logicalStrides();
    if (!o.outPerm.empty() && (as.size() < 2 || bs.size() < 2 || o.outPerm.size() != std::max(as.size(), bs.size())))
      return kernelError(n, "a transposed result needs matrix operands of the result's rank");
    // A 2-D right operand applies to every row of a row-major left one: one 2-D GEMM.
    if (bs.size() == 2 && as.size() > 2 && o.outPerm.empty() && isRowMajor(dims(as.begin(), as.end()), ast)) {
      int64_t k0 = as.back();
      as = Shape{numElements(as) / std::max<int64_t>(k0, 1), k0};
      ast = rowMajorStrides(dims(as.begin(), as.end()));
    }
    if (as.size() == 1) {
      as.insert(as.begin(), 1);
      ast.insert(ast.begin(), as[1]);
    }
    if (bs.size() == 1) {
      bs.push_back(1);
      bst.push_back(1);
    }
    size_t rank = std::max<size_t>(std::max(as.size(), bs.size()), 2);
    auto pad = [&](Shape &s, dims &st) {
      while (s.size() < rank) {
        st.insert(st.begin(), s.empty() ? 1 : s[0] * st[0]);
        s.insert(s.begin(), 1);
      }
    };
    pad(as, ast);
    pad(bs, bst);
    dims ad(as.begin(), as.end()), bd(bs.begin(), bs.end()), cd(rank);
    for (size_t i = 0; i + 2 < rank; ++i)
      cd[i] = std::max(ad[i], bd[i]);
    cd[rank - 2] = ad[rank - 2];
    cd[rank - 1] = bd[rank - 1];
    try {
      const auto &engine = dnnlEngine();
      dnnl::primitive_attr attr;
      if (o.alpha != 1.0f)
        attr.set_output_scales(0, {o.alpha});
      if (o.epilogue != dnnl::algorithm::undef) {
        dnnl::post_ops ops;
        ops.append_eltwise(1.0f, o.epilogue, 0.0f, 0.0f);
        attr.set_post_ops(ops);
      }
      k->aDesc_ = plainDesc(ad, ast, a.type);
      k->bDesc_ = plainDesc(bd, bst, b.type);
      dims cst = rowMajorStrides(cd);
      if (!o.outPerm.empty()) { // result dim perm[j] is dim j of the transposed, row-major output
        dims yd(rank), ys;
        for (size_t j = 0; j < rank; ++j)
          yd[j] = cd[o.outPerm[j]];
        ys = rowMajorStrides(yd);
        for (size_t j = 0; j < rank; ++j)
          cst[o.outPerm[j]] = ys[j];
      }
      k->cDesc_ = plainDesc(cd, cst);
      // B is copied into oneDNN's blocked layout when it is constant (once),
      // or when its rows are a multiple of 4 KiB apart: every row of a K-block
      // then falls into the same cache set and the GEMM runs ~2.5x slower
      // (measured: [512,768]x[768,3072] at 49 vs 121 GFLOP/s on one core).
      int64_t bElem = b.type == dnnl::memory::data_type::f32 ? 4 : 2;
      bool aliasedRows = bst[rank - 1] == 1 && bd[rank - 2] > 1 && (bst[rank - 2] * bElem) % 4096 == 0;
      k->bEveryRun_ = !b.constant && aliasedRows;
      bool blockedB = b.constant || k->bEveryRun_;
      auto build = [&](const dnnl::memory::desc &aDesc) {
        auto bWanted = blockedB ? dnnl::memory::desc(bd, b.type, dnnl::memory::format_tag::any)
                                : k->bDesc_;
        dnnl::matmul::desc desc = [&] {
          if (!o.hasBias)
            return dnnl::matmul::desc(aDesc, bWanted, k->cDesc_);
          dims biasDims(rank, 1);
          biasDims[rank - 1] = cd[rank - 1];
          return dnnl::matmul::desc(aDesc, bWanted, plainDesc(biasDims, rowMajorStrides(biasDims)), k->cDesc_);
        }();
        return dnnl::matmul::primitive_desc(desc, attr, engine);
      };
      dnnl::matmul::primitive_desc pd = build(k->aDesc_);
      // oneDNN's optimized kernels read most strided operands; for the rest
      // (reference implementation) A is first packed row-major, and B copied
      // into the blocked layout every run.
      if (llvm::StringRef(pd.impl_info_str()).startswith("ref") && !isRowMajor(ad, ast)) {
        k->aPackedDesc_ = plainDesc(ad, rowMajorStrides(ad), a.type);
        k->aPack_ = dnnl::reorder(dnnl::memory(k->aDesc_, engine), dnnl::memory(k->aPackedDesc_, engine));
        pd = build(k->aPackedDesc_);
      }
      bool packsA = k->aPackedDesc_.get_size() != 0;
      if (llvm::StringRef(pd.impl_info_str()).startswith("ref") && !blockedB && !isRowMajor(bd, bst)) {
        k->bEveryRun_ = blockedB = true;
        pd = build(packsA ? k->aPackedDesc_ : k->aDesc_);
      }
      if (!o.outPerm.empty() && llvm::StringRef(pd.impl_info_str()).startswith("ref"))
        return kernelError(n, "oneDNN has no optimized matmul writing this transposed result");
      k->prim_ = dnnl::matmul(pd);
      k->bPrimDesc_ = pd.weights_desc();
      k->biasDesc_ = pd.bias_desc();
      k->hasBias_ = o.hasBias;
      k->swapped_ = o.swapped;
    } catch (const dnnl::error &e) {
      return kernelError(n, llvm::Twine("oneDNN matmul cannot be created: ") + e.what());
    }
    return std::unique_ptr<Kernel>(std::move(k));
  }

  /// A constant B's blocked copy, made once.
  size_t persistentBytes() const override {
    return bPrimDesc_ != bDesc_ && !bEveryRun_ ? bPrimDesc_.get_size() : 0;
  }
  /// A's row-major packing and a per-run blocked copy of B: scratch.
  ScratchNeed scratch() const override {
    return {aPackedBytes() + (bPrimDesc_ != bDesc_ && bEveryRun_ ? bPrimDesc_.get_size() : 0),
            MemoryCategory::Workspace};
  }

  llvm::Error run(KernelContext &ctx) override {
    const auto &engine = dnnlEngine();
    const int aIn = swapped_ ? 1 : 0, bIn = 1 - aIn;
    dnnl::memory src(aDesc_, engine, ctx.inputs[aIn].data);
    if (aPackedBytes()) {
      dnnl::memory packed(aPackedDesc_, engine, ctx.scratch);
      aPack_.execute(dnnlStream(), src, packed);
      src = packed;
    }
    dnnl::memory weights(bDesc_, engine, ctx.inputs[bIn].data);
    if (bPrimDesc_ != bDesc_ && bEveryRun_) { // into the scratch, after A's packing
      dnnl::memory blocked(bPrimDesc_, engine, static_cast<char *>(ctx.scratch) + aPackedBytes());
      dnnl::reorder(weights, blocked).execute(dnnlStream(), weights, blocked);
      weights = blocked;
    } else if (bPrimDesc_ != bDesc_) {
      // Constant weights: reorder once into the primitive's layout; again only
      // if the program hands us a different buffer or new weight values.
      if (reorderedFrom_ != ctx.inputs[bIn].data || reorderedVersion_ != ctx.weightsVersion) {
        if (!reordered_) {
          reordered_ = dnnl::memory(bPrimDesc_, engine);
          reorderedCharge_.setLedger(ctx.device.ledger()); // the kernel's own copy, on its device
          reorderedCharge_.resize(bPrimDesc_.get_size());
        }
        dnnl::reorder(weights, reordered_).execute(dnnlStream(), weights, reordered_);
        reorderedFrom_ = ctx.inputs[bIn].data;
        reorderedVersion_ = ctx.weightsVersion;
      }
      weights = reordered_;
    }
    std::unordered_map<int, dnnl::memory> args{
        {DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, weights}, {DNNL_ARG_DST, dnnl::memory(cDesc_, engine, ctx.outputs[0].data)}};
    if (hasBias_)
      args.insert({DNNL_ARG_BIAS, dnnl::memory(biasDesc_, engine, ctx.inputs[2].data)});
    prim_.execute(dnnlStream(), args);
    return llvm::Error::success();
  }

private:
  MatMulKernel() = default;
  dnnl::matmul prim_;
  /// A's packing, rounded up so that B's blocked copy after it stays aligned.
  size_t aPackedBytes() const {
    return (aPackedDesc_.get_size() + Device::alignment() - 1) / Device::alignment() * Device::alignment();
  }
  dnnl::memory::desc aDesc_, aPackedDesc_, bDesc_, bPrimDesc_, cDesc_, biasDesc_;
  dnnl::reorder aPack_;
  dnnl::memory reordered_;
  MemoryCharge reorderedCharge_{MemoryCategory::Workspace, 0};
  const void *reorderedFrom_ = nullptr;
  uint64_t reorderedVersion_ = 0;
  bool hasBias_ = false, bEveryRun_ = false, swapped_ = false;
};

/// Gemm's beta·C term for C that is not a plain [N] bias: added after the matmul.
class GemmKernel final : public Kernel {
public:
  GemmKernel(std::unique_ptr<Kernel> mm, float beta, Shape cShape, Shape outShape)
      : mm_(std::move(mm)), beta_(beta), c_(std::move(cShape)), out_(std::move(outShape)) {}
  size_t persistentBytes() const override { return mm_->persistentBytes(); }
  ScratchNeed scratch() const override { return mm_->scratch(); }
  llvm::Error run(KernelContext &ctx) override {
    std::vector<TensorView> abIns(ctx.inputs.begin(), ctx.inputs.begin() + 2);
    KernelContext inner{ctx.device, abIns, ctx.outputs, ctx.env, ctx.weightsVersion};
    inner.scratch = ctx.scratch;
    if (auto err = mm_->run(inner))
      return err;
    if (ctx.inputs.size() < 3 || !ctx.inputs[2].data)
      return llvm::Error::success();
    BroadcastIndexer idx(c_, out_);
    float *y = ctx.outputs[0].as<float>();
    const float *c = ctx.inputs[2].as<float>();
    for (int64_t i = 0; i < numElements(out_); ++i)
      y[i] += beta_ * c[idx(i)];
    return llvm::Error::success();
  }

private:
  std::unique_ptr<Kernel> mm_;
  float beta_;
  Shape c_, out_;
};

/// A value that stays the same from run to run: a Constant, or a Weight the
/// optimizer does not update every step (markUpdatedWeights). A weight that
/// changes every step is read in its own layout: a blocked copy per kernel
/// would be remade every step, and cost a copy of the weight in memory per
/// matmul reading it; bench/zero_memory.sh measured the plain layout's step
/// time against it (README, Benchmarks).
bool isProgramConstant(const Value *v) {
  const Node *d = v ? v->definingNode() : nullptr;
  return d && (d->is("Constant") || (d->is("Weight") && d->intAttr("updated_every_step", 0) == 0));
}

/// The bf16 widening operand k is read through: `producer` itself, or the
/// one a Transpose producer reads (null: none).
const Node *widenedThrough(const Node *producer) {
  if (isBf16Widening(producer))
    return producer;
  const Node *d = producer && producer->is("Transpose") ? producer->input(0)->definingNode() : nullptr;
  return isBf16Widening(d) ? d : nullptr;
}

/// Operand k of a MatMul/Linear node, read through `producer` when not null:
/// a Transpose the kernel reads by strides; with `half`, the bf16 input of
/// the widening it is or reads (FusionPlan pairs them: both operands or none).
Operand operandOf(const Node &n, size_t k, const Node *producer, bool half = false) {
  Operand op;
  const Node *widening = half ? widenedThrough(producer) : nullptr;
  const Value *v = widening ? widening->input(0) : producer ? producer->input(0) : n.input(k);
  op.stored = v->type().shape;
  op.constant = isProgramConstant(v);
  if (widening)
    op.type = dnnl::memory::data_type::bf16;
  if (producer && producer->is("Transpose"))
    op.perm = transposePerm(*producer);
  return op;
}

/// Whether `perm` (of a rank-`rank` result) swaps its last two dimensions and
/// keeps the rest.
bool swapsLastTwo(const std::vector<int64_t> &perm, size_t rank) {
  if (perm.size() != rank || rank < 2)
    return false;
  for (size_t i = 0; i + 2 < rank; ++i)
    if (perm[i] != static_cast<int64_t>(i))
      return false;
  return perm[rank - 2] == static_cast<int64_t>(rank - 1) && perm[rank - 1] == static_cast<int64_t>(rank - 2);
}

/// `op` read with its last two (logical) dimensions swapped.
Operand transposedLastTwo(Operand op) {
  if (op.perm.empty())
    for (size_t i = 0; i < op.stored.size(); ++i)
      op.perm.push_back(static_cast<int64_t>(i));
  std::swap(op.perm[op.perm.size() - 2], op.perm.back());
  return op;
}

llvm::Expected<std::unique_ptr<Kernel>> makeMatMulWith(const Node &n, const std::vector<const Node *> &producers,
                                                       const Node *epilogue) {
  auto isF32 = [](const Node *m) { return !m || allOfType(*m, DType::F32) || isBf16Widening(m); }; // a widening reads bf16
  if (!isF32(&n) || !isF32(epilogue) || !std::all_of(producers.begin(), producers.end(), isF32)) {
    if (epilogue || std::any_of(producers.begin(), producers.end(), [](const Node *p) { return p; }))
      return kernelError(n, "operand and epilogue fusion need f32");
    return makeFallbackKernel(n);
  }
  MatMulOptions o;
  o.hasBias = n.is("Linear", "partita");
  if (epilogue && epilogue->is("Transpose")) {
    o.outPerm = transposePerm(*epilogue);
  } else if (epilogue)
    o.epilogue = llvm::StringSwitch<dnnl::algorithm>(epilogue->qualifiedOp())
                     .Case("partita.Gelu", dnnl::algorithm::eltwise_gelu_erf)
                     .Case("partita.FastGelu", dnnl::algorithm::eltwise_gelu_tanh)
                     .Case("Relu", dnnl::algorithm::eltwise_relu)
                     .Default(dnnl::algorithm::undef);
  auto producer = [&](size_t k) { return k < producers.size() ? producers[k] : nullptr; };
  if (const Node *bias = producer(2); bias && n.input(2)->type().shape.size() > 1)
    return kernelError(n, "a bias read through " + bias->describe() + " must be 1-D");
  // Both operands widened from bf16 on a CPU with a bf16 GEMM: FusionPlan's
  // rule, so the program binds the bf16 values (FusionPlan::operandValue).
  bool half = dnnlHasBf16Matmul() && widenedThrough(producer(0)) && widenedThrough(producer(1));
  Operand a = operandOf(n, 0, producer(0), half), b = operandOf(n, 1, producer(1), half);
  if (swapsLastTwo(o.outPerm, std::max(a.stored.size(), b.stored.size())) && !o.hasBias && !b.constant &&
      a.stored.size() >= 2 && b.stored.size() >= 2) {
    // (A B)^T = B^T A^T: the product of the swapped, transposed operands is
    // the transposed result, written row-major (oneDNN has no optimized
    // kernel for a transposed result under a transposed operand: the
    // backward's dW^T = (x^T dy)^T of a tied embedding then ran as a GEMM
    // plus a 25 MB Transpose at a fifth of the copy bandwidth).
    o.outPerm.clear();
    o.swapped = true;
    return MatMulKernel::create(n, transposedLastTwo(b), transposedLastTwo(a), o);
  }
  return MatMulKernel::create(n, a, b, o);
}

llvm::Expected<std::unique_ptr<Kernel>> makeMatMul(const Node &n) { return makeMatMulWith(n, {}, nullptr); }

llvm::Expected<std::unique_ptr<Kernel>> makeGemm(const Node &n) {
  if (!allOfType(n, DType::F32))
    return kernelError(n, "the CPU Gemm kernel supports f32 only");
  float alpha = static_cast<float>(n.floatAttr("alpha", 1.0)), beta = static_cast<float>(n.floatAttr("beta", 1.0));
  const Value *c = n.input(2);
  Shape out = n.output()->type().shape;
  bool biasLike = c && beta == 1.0f && alpha == 1.0f && c->type().shape.size() == 1 && c->type().shape[0] == out[1];
  MatMulOptions o;
  o.hasBias = biasLike;
  o.alpha = alpha;
  Operand a = operandOf(n, 0, nullptr), b = operandOf(n, 1, nullptr);
  if (n.intAttr("transA", 0))
    a.perm = {1, 0};
  if (n.intAttr("transB", 0))
    b.perm = {1, 0};
  auto mm = MatMulKernel::create(n, a, b, o);
  if (!mm || biasLike)
    return mm;
  return std::unique_ptr<Kernel>(new GemmKernel(std::move(*mm), beta, c ? c->type().shape : Shape{}, out));
}

} // namespace

void registerGemmKernels(KernelRegistry &r) {
  r.add("MatMul", kCpuDevice, makeMatMul);
  r.add("partita.Linear", kCpuDevice, makeMatMul);
  r.add("Gemm", kCpuDevice, makeGemm);
  for (const char *producer : {"MatMul", "partita.Linear"}) {
    // Activations fused as oneDNN post-ops; a Transpose of the product by
    // writing it through strides (attention's heads back to [B, T, H, D]).
    for (const char *consumer : {"partita.Gelu", "partita.FastGelu", "Relu", "Transpose"})
      r.addEpilogue(producer, consumer, kCpuDevice,
                    [](const Node &p, const Node &c) { return makeMatMulWith(p, {}, &c); });
    // Transposed operands read through strides (the backward pass's dW = x^T dy).
    r.addOperandFusion(producer, "Transpose", kCpuDevice, makeMatMulWith);
    // Both operands widened from bf16 (mixed precision): one bf16 GEMM with
    // f32 accumulation and result, where the CPU has one (FusionPlan pairs them).
    if (dnnlHasBf16Matmul())
      r.addOperandFusion(producer, "Cast", kCpuDevice, makeMatMulWith);
  }
}

} // namespace partita::rt::cpu
