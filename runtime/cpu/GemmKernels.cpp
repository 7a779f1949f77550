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

class MatMulKernel final : public Kernel {
public:
  /// a: [.., M, K] (or its transpose when transA), b likewise; bias [N] optional.
  static llvm::Expected<std::unique_ptr<Kernel>> create(const Node &n, Shape a, Shape b, bool transA,
                                                        bool transB, bool hasBias, float alpha) {
    auto k = std::unique_ptr<MatMulKernel>(new MatMulKernel());
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
      if (alpha != 1.0f)
        attr.set_output_scales(0, {alpha});
      auto aDesc = plainDesc(ad, as), bDesc = plainDesc(bd, bs), cDesc = plainDesc(cd, rowMajorStrides(cd));
      dnnl::matmul::desc desc = [&] {
        if (!hasBias)
          return dnnl::matmul::desc(aDesc, bDesc, cDesc);
        dims biasDims(rank, 1);
        biasDims[rank - 1] = cd[rank - 1];
        return dnnl::matmul::desc(aDesc, bDesc, plainDesc(biasDims, rowMajorStrides(biasDims)), cDesc);
      }();
      dnnl::matmul::primitive_desc pd(desc, attr, engine);
      k->prim_ = dnnl::matmul(pd);
      k->aDesc_ = aDesc;
      k->bDesc_ = bDesc;
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
    std::unordered_map<int, dnnl::memory> args{
        {DNNL_ARG_SRC, dnnl::memory(aDesc_, engine, ctx.inputs[0].data)},
        {DNNL_ARG_WEIGHTS, dnnl::memory(bDesc_, engine, ctx.inputs[1].data)},
        {DNNL_ARG_DST, dnnl::memory(cDesc_, engine, ctx.outputs[0].data)}};
    if (hasBias_)
      args.insert({DNNL_ARG_BIAS, dnnl::memory(biasDesc_, engine, ctx.inputs[2].data)});
    prim_.execute(dnnlStream(), args);
    return llvm::Error::success();
  }

private:
  MatMulKernel() = default;
  dnnl::matmul prim_;
  dnnl::memory::desc aDesc_, bDesc_, cDesc_, biasDesc_;
  bool hasBias_ = false;
};

/// Gemm's beta·C term for C that is not a plain [N] bias: added after the matmul.
class GemmKernel final : public Kernel {
public:
  GemmKernel(std::unique_ptr<Kernel> mm, float beta, Shape cShape, Shape outShape)
      : mm_(std::move(mm)), beta_(beta), c_(std::move(cShape)), out_(std::move(outShape)) {}
  llvm::Error run(KernelContext &ctx) override {
    std::vector<TensorView> abIns(ctx.inputs.begin(), ctx.inputs.begin() + 2);
    KernelContext inner{ctx.device, abIns, ctx.outputs};
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

llvm::Expected<std::unique_ptr<Kernel>> makeMatMul(const Node &n) {
  if (!allOfType(n, DType::F32))
    return makeFallbackKernel(n);
  return MatMulKernel::create(n, n.input(0)->type().shape, n.input(1)->type().shape, false, false,
                              false, 1.0f);
}

llvm::Expected<std::unique_ptr<Kernel>> makeLinear(const Node &n) {
  if (!allOfType(n, DType::F32))
    return kernelError(n, "the CPU Linear kernel supports f32 only");
  return MatMulKernel::create(n, n.input(0)->type().shape, n.input(1)->type().shape, false, false,
                              true, 1.0f);
}

llvm::Expected<std::unique_ptr<Kernel>> makeGemm(const Node &n) {
  if (!allOfType(n, DType::F32))
    return kernelError(n, "the CPU Gemm kernel supports f32 only");
  float alpha = static_cast<float>(n.floatAttr("alpha", 1.0)), beta = static_cast<float>(n.floatAttr("beta", 1.0));
  bool ta = n.intAttr("transA", 0), tb = n.intAttr("transB", 0);
  const Value *c = n.input(2);
  Shape out = n.output()->type().shape;
  bool biasLike = c && beta == 1.0f && alpha == 1.0f && c->type().shape.size() == 1 && c->type().shape[0] == out[1];
  auto mm = MatMulKernel::create(n, n.input(0)->type().shape, n.input(1)->type().shape, ta, tb, biasLike, alpha);
  if (!mm || biasLike)
    return mm;
  return std::unique_ptr<Kernel>(new GemmKernel(std::move(*mm), beta, c ? c->type().shape : Shape{}, out));
}

} // namespace

void registerGemmKernels(KernelRegistry &r) {
  r.add("MatMul", DeviceKind::CPU, makeMatMul);
  r.add("partita.Linear", DeviceKind::CPU, makeLinear);
  r.add("Gemm", DeviceKind::CPU, makeGemm);
}

} // namespace partita::rt::cpu
