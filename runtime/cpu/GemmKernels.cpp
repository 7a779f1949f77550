//===- GemmKernels.cpp - MatMul, partita.Linear, Gemm on oneDNN matmul ----===//
//
// One oneDNN matmul primitive per node, created at load for the node's static
// shapes: numpy batch broadcasting maps onto oneDNN's broadcast batch dims,
// Gemm's transposes onto strides, Linear's bias onto the primitive's bias.
//===----------------------------------------------------------------------===//
#include "runtime/cpu/CpuKernels.h"
#include "runtime/cpu/Dnnl.h"
#include "compiler/ops/Broadcast.h"

namespace partita::rt::cpu {

namespace {

using dims = dnnl::memory::dims;

dnnl::memory::desc plainDesc(const dims &d, const dims &strides) {
  return dnnl::memory::desc(d, dnnl::memory::data_type::f32, strides);
}

dims rowMajorStrides(const dims &d) {
  dims s(d.size(), 1);
  for (int i = static_cast<int>(d.size()) - 2; i >= 0; --i)
    s[i] = s[i + 1] * d[i + 1];
  return s;
}

struct MatMulOptions {
  bool transA = false, transB = false, hasBias = false;
  float alpha = 1.0f;
  /// The weights operand is a program constant: it may be reordered once
  /// into oneDNN's preferred blocked layout.
  bool constantWeights = false;
  /// Elementwise epilogue fused as a oneDNN post-op (undef: none).
  dnnl::algorithm epilogue = dnnl::algorithm::undef;
};

class MatMulKernel final : public Kernel {
public:
  /// a: [.., M, K] (or its transpose when transA), b likewise; bias [N] optional.
  static llvm::Expected<std::unique_ptr<Kernel>> create(const Node &n, Shape a, Shape b,
                                                        const MatMulOptions &o) {
    auto k = std::unique_ptr<MatMulKernel>(new MatMulKernel());
    bool transA = o.transA, transB = o.transB, hasBias = o.hasBias;
    // A 2-D right operand applies to every row of the left one: one 2-D GEMM.
    if (b.size() == 2 && a.size() > 2 && !transA) {
      int64_t k0 = a.back();
      a = Shape{numElements(a) / std::max<int64_t>(k0, 1), k0};
    }
    bool aVec = a.size() == 1, bVec = b.size() == 1;
    if (aVec)
      a.insert(a.begin(), 1);
    if (bVec)
      b.push_back(1);
    size_t rank = std::max<size_t>(std::max(a.size(), b.size()), 2);
    while (a.size() < rank)
      a.insert(a.begin(), 1);
    while (b.size() < rank)
      b.insert(b.begin(), 1);
    // Logical (untransposed) dims and the strides that read the stored layout.
    auto logical = [&](const Shape &s, bool trans, dims &d, dims &st) {
      d.assign(s.begin(), s.end());
      st = rowMajorStrides(d);
      if (trans) {
        std::swap(d[rank - 1], d[rank - 2]);
        std::swap(st[rank - 1], st[rank - 2]);
      }
    };
    dims ad, as, bd, bs;
    logical(a, transA, ad, as);
    logical(b, transB, bd, bs);
    dims cd(rank);
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
      auto aDesc = plainDesc(ad, as), bDesc = plainDesc(bd, bs), cDesc = plainDesc(cd, rowMajorStrides(cd));
      auto bWanted = o.constantWeights ? dnnl::memory::desc(bd, dnnl::memory::data_type::f32,
                                                            dnnl::memory::format_tag::any)
                                       : bDesc;
      dnnl::matmul::desc desc = [&] {
        if (!hasBias)
          return dnnl::matmul::desc(aDesc, bWanted, cDesc);
        dims biasDims(rank, 1);
        biasDims[rank - 1] = cd[rank - 1];
        return dnnl::matmul::desc(aDesc, bWanted, plainDesc(biasDims, rowMajorStrides(biasDims)), cDesc);
      }();
      dnnl::matmul::primitive_desc pd(desc, attr, engine);
      k->prim_ = dnnl::matmul(pd);
      k->aDesc_ = aDesc;
      k->bDesc_ = bDesc;
      k->bPrimDesc_ = pd.weights_desc();
      k->cDesc_ = cDesc;
      k->biasDesc_ = pd.bias_desc();
      k->hasBias_ = hasBias;
    } catch (const dnnl::error &e) {
      return kernelError(n, llvm::Twine("oneDNN matmul cannot be created: ") + e.what());
    }
    return std::unique_ptr<Kernel>(std::move(k));
  }

  llvm::Error run(KernelContext &ctx) override {
    const auto &engine = dnnlEngine();
    dnnl::memory weights(bDesc_, engine, ctx.inputs[1].data);
    if (bPrimDesc_ != bDesc_) {
      // Constant weights: reorder once into the primitive's layout; again only
      // if the program hands us a different buffer.
      if (reorderedFrom_ != ctx.inputs[1].data || reorderedVersion_ != ctx.weightsVersion) {
        reordered_ = dnnl::memory(bPrimDesc_, engine);
        dnnl::reorder(weights, reordered_).execute(dnnlStream(), weights, reordered_);
        reorderedFrom_ = ctx.inputs[1].data;
        reorderedVersion_ = ctx.weightsVersion;
      }
      weights = reordered_;
    }
    std::unordered_map<int, dnnl::memory> args{
        {DNNL_ARG_SRC, dnnl::memory(aDesc_, engine, ctx.inputs[0].data)},
        {DNNL_ARG_WEIGHTS, weights},
        {DNNL_ARG_DST, dnnl::memory(cDesc_, engine, ctx.outputs[0].data)}};
    if (hasBias_)
      args.insert({DNNL_ARG_BIAS, dnnl::memory(biasDesc_, engine, ctx.inputs[2].data)});
    prim_.execute(dnnlStream(), args);
    return llvm::Error::success();
  }

private:
  MatMulKernel() = default;
  dnnl::matmul prim_;
  dnnl::memory::desc aDesc_, bDesc_, bPrimDesc_, cDesc_, biasDesc_;
  dnnl::memory reordered_;
  const void *reorderedFrom_ = nullptr;
  uint64_t reorderedVersion_ = 0;
  bool hasBias_ = false;
};

/// Gemm's beta·C term for C that is not a plain [N] bias: added after the matmul.
class GemmKernel final : public Kernel {
public:
  GemmKernel(std::unique_ptr<Kernel> mm, float beta, Shape cShape, Shape outShape)
      : mm_(std::move(mm)), beta_(beta), c_(std::move(cShape)), out_(std::move(outShape)) {}
  llvm::Error run(KernelContext &ctx) override {
    std::vector<TensorView> abIns(ctx.inputs.begin(), ctx.inputs.begin() + 2);
    KernelContext inner{ctx.device, abIns, ctx.outputs, ctx.env, ctx.weightsVersion};
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

bool isProgramConstant(const Value *v) {
  const Node *d = v ? v->definingNode() : nullptr;
  return d && (d->is("Weight") || d->is("Constant"));
}

llvm::Expected<std::unique_ptr<Kernel>> makeMatMulWith(const Node &n, dnnl::algorithm epilogue) {
  if (!allOfType(n, DType::F32))
    return makeFallbackKernel(n);
  MatMulOptions o;
  o.hasBias = n.is("Linear", "partita");
  o.constantWeights = isProgramConstant(n.input(1));
  o.epilogue = epilogue;
  return MatMulKernel::create(n, n.input(0)->type().shape, n.input(1)->type().shape, o);
}

llvm::Expected<std::unique_ptr<Kernel>> makeMatMul(const Node &n) {
  return makeMatMulWith(n, dnnl::algorithm::undef);
}

llvm::Expected<std::unique_ptr<Kernel>> makeGemm(const Node &n) {
  if (!allOfType(n, DType::F32))
    return kernelError(n, "the CPU Gemm kernel supports f32 only");
  float alpha = static_cast<float>(n.floatAttr("alpha", 1.0)), beta = static_cast<float>(n.floatAttr("beta", 1.0));
  bool ta = n.intAttr("transA", 0), tb = n.intAttr("transB", 0);
  const Value *c = n.input(2);
  Shape out = n.output()->type().shape;
  bool biasLike = c && beta == 1.0f && alpha == 1.0f && c->type().shape.size() == 1 && c->type().shape[0] == out[1];
  MatMulOptions o;
  o.transA = ta;
  o.transB = tb;
  o.hasBias = biasLike;
  o.alpha = alpha;
  auto mm = MatMulKernel::create(n, n.input(0)->type().shape, n.input(1)->type().shape, o);
  if (!mm || biasLike)
    return mm;
  return std::unique_ptr<Kernel>(new GemmKernel(std::move(*mm), beta, c ? c->type().shape : Shape{}, out));
}

} // namespace

void registerGemmKernels(KernelRegistry &r) {
  r.add("MatMul", DeviceKind::CPU, makeMatMul);
  r.add("partita.Linear", DeviceKind::CPU, makeMatMul);
  r.add("Gemm", DeviceKind::CPU, makeGemm);
  // Activations fused as oneDNN post-ops.
  const std::pair<const char *, dnnl::algorithm> epilogues[] = {
      {"partita.Gelu", dnnl::algorithm::eltwise_gelu_erf},
      {"partita.FastGelu", dnnl::algorithm::eltwise_gelu_tanh},
      {"Relu", dnnl::algorithm::eltwise_relu}};
  for (const char *producer : {"MatMul", "partita.Linear"})
    for (const auto &[consumer, alg] : epilogues) {
      dnnl::algorithm a = alg;
      r.add(producer, DeviceKind::CPU, makeMatMul);
      r.addEpilogue(producer, consumer, DeviceKind::CPU,
                    [a](const Node &p, const Node &c) -> llvm::Expected<std::unique_ptr<Kernel>> {
                      if (!allOfType(p, DType::F32) || !allOfType(c, DType::F32))
                        return kernelError(c, "epilogue fusion needs f32");
                      return makeMatMulWith(p, a);
                    });
    }
}

} // namespace partita::rt::cpu
