//===- GemmKernel.cpp -----------------------------------------------------===//
#include "runtime/cuda/GemmKernel.h"
#include "runtime/cuda/CublasLt.h"
#include "runtime/cuda/CudaDevice.h"
#include "runtime/cuda/GemmPlan.h"
#include <algorithm>
#include <cstdint>
#include <cstdlib>

namespace partita::rt::cuda {

namespace {

llvm::Error gemmError(const Node &n, const llvm::Twine &why) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "node " + n.describe() + ": " + why);
}

std::optional<cudaDataType_t> cudaType(DType t) {
  switch (t) {
  case DType::F32: return CUDA_R_32F;
  case DType::BF16: return CUDA_R_16BF;
  case DType::F16: return CUDA_R_16F;
  default: return std::nullopt;
  }
}

/// The largest power of two up to 256 that divides `p`'s address.
uint32_t alignmentOf(const void *p) {
  auto a = reinterpret_cast<uintptr_t>(p);
  uint32_t align = 256;
  while (align > 1 && a % align)
    align /= 2;
  return align;
}

/// The stored type of operand k: a widening Cast's input, or the operand.
DType storedType(const Node &n, const Node *producer, size_t k) {
  return producer && producer->is("Cast") ? producer->input(0)->type().dtype : n.input(k)->type().dtype;
}

class GemmKernel final : public Kernel {
public:
  explicit GemmKernel(const CublasLt &lt) : lt_(lt) {}
  ~GemmKernel() override {
    for (cublasLtMatrixLayout_t l : {first_, second_, result_})
      if (l)
        lt_.cublasLtMatrixLayoutDestroy(l);
    if (desc_)
      lt_.cublasLtMatmulDescDestroy(desc_);
  }

  /// Builds the descriptors; a cuBLASLt status other than success names the call.
  llvm::Error init(const Node &n, const GemmPlan &p, DType aType, DType bType, bool bias, cublasLtEpilogue_t epilogue,
                   float alpha) {
    node_ = &n;
    alpha_ = alpha;
    bias_ = bias;
    bool half = aType != DType::F32;
    bool tf32 = !half && std::getenv("PARTITA_CUDA_TF32") && std::string(std::getenv("PARTITA_CUDA_TF32")) == "1";
    cublasComputeType_t compute = tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    auto ok = [&](cublasStatus_t s, const char *what) -> llvm::Error {
      if (s == CUBLAS_STATUS_SUCCESS)
        return llvm::Error::success();
      return gemmError(n, llvm::Twine(what) + " failed: " + lt_.cublasLtGetStatusString(s));
    };
    if (auto e = ok(lt_.cublasLtMatmulDescCreate(&desc_, compute, CUDA_R_32F), "cublasLtMatmulDescCreate"))
      return e;
    cublasOperation_t opFirst = p.transFirst ? CUBLAS_OP_T : CUBLAS_OP_N, opSecond = CUBLAS_OP_N;
    if (auto e = ok(lt_.cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_TRANSA, &opFirst, sizeof opFirst),
                    "setting TRANSA"))
      return e;
    if (auto e = ok(lt_.cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_TRANSB, &opSecond, sizeof opSecond),
                    "setting TRANSB"))
      return e;
    if (auto e = ok(lt_.cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue),
                    "setting the epilogue"))
      return e;
    // cuBLAS's first operand is our B, its second our A (GemmPlan.h).
    auto layout = [&](cublasLtMatrixLayout_t &l, DType t, int64_t rows, int64_t cols, int64_t ld,
                      int64_t stride) -> llvm::Error {
      if (auto e = ok(lt_.cublasLtMatrixLayoutCreate(&l, *cudaType(t), rows, cols, ld), "cublasLtMatrixLayoutCreate"))
        return e;
      if (p.batch == 1)
        return llvm::Error::success();
      int32_t count = static_cast<int32_t>(p.batch);
      if (auto e = ok(lt_.cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count),
                      "setting the batch count"))
        return e;
      return ok(lt_.cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
                                                 sizeof stride),
                "setting the batch stride");
    };
    if (auto e = layout(first_, bType, p.firstRows(), p.firstCols(), p.ldFirst, p.strideFirst))
      return e;
    if (auto e = layout(second_, aType, p.k, p.n, p.ldSecond, p.strideSecond))
      return e;
    return layout(result_, DType::F32, p.m, p.n, p.ldResult, p.strideResult);
  }

  ScratchNeed scratch() const override { return {kGemmWorkspace, MemoryCategory::Workspace}; }

  llvm::Error run(KernelContext &ctx) override {
    auto &device = static_cast<CudaDevice &>(ctx.device);
    auto handle = device.blasLt();
    if (!handle)
      return handle.takeError();
    if (bias_) {
      const void *bias = ctx.inputs[2].data;
      if (lt_.cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias) !=
          CUBLAS_STATUS_SUCCESS)
        return gemmError(*node_, "setting the bias pointer failed");
    }
    // The executor places tensors at 64-byte multiples, not the 256 bytes
    // cuBLASLt's heuristic assumes by default: tell it each operand's
    // alignment, and choose again when a run's addresses align otherwise.
    uint32_t align[3] = {alignmentOf(ctx.inputs[1].data), alignmentOf(ctx.inputs[0].data),
                         alignmentOf(ctx.outputs[0].data)};
    if (!chosen_ || !std::equal(align, align + 3, chosenAlign_)) { // the heuristic's best for this device
      cublasLtMatmulPreference_t pref = nullptr;
      lt_.cublasLtMatmulPreferenceCreate(&pref);
      size_t workspace = kGemmWorkspace;
      lt_.cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace,
                                           sizeof workspace);
      const cublasLtMatmulPreferenceAttributes_t which[4] = {
          CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
          CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
      const uint32_t value[4] = {align[0], align[1], align[2], align[2]};
      for (int k = 0; k < 4; ++k)
        lt_.cublasLtMatmulPreferenceSetAttribute(pref, which[k], &value[k], sizeof value[k]);
      int found = 0;
      cublasStatus_t s = lt_.cublasLtMatmulAlgoGetHeuristic(*handle, desc_, first_, second_, result_, result_, pref, 1,
                                                        &algo_, &found);
      lt_.cublasLtMatmulPreferenceDestroy(pref);
      if (s != CUBLAS_STATUS_SUCCESS || found == 0)
        return gemmError(*node_, llvm::Twine("cuBLASLt has no algorithm for this matmul (") +
                                     lt_.cublasLtGetStatusString(s) + ")");
      chosen_ = true;
      std::copy(align, align + 3, chosenAlign_);
    }
    float beta = 0.0f;
    cublasStatus_t s = lt_.cublasLtMatmul(*handle, desc_, &alpha_, ctx.inputs[1].data, first_, ctx.inputs[0].data,
                                      second_, &beta, ctx.outputs[0].data, result_, ctx.outputs[0].data, result_,
                                      &algo_.algo, ctx.scratch, kGemmWorkspace, device.computeStream());
    if (s != CUBLAS_STATUS_SUCCESS)
      return gemmError(*node_, llvm::Twine("cublasLtMatmul failed: ") + lt_.cublasLtGetStatusString(s));
    return llvm::Error::success();
  }

private:
  const CublasLt &lt_;
  const Node *node_ = nullptr;
  float alpha_ = 1.0f;
  bool bias_ = false;
  cublasLtMatmulDesc_t desc_ = nullptr;
  cublasLtMatrixLayout_t first_ = nullptr, second_ = nullptr, result_ = nullptr;
  cublasLtMatmulHeuristicResult_t algo_{};
  bool chosen_ = false;
  uint32_t chosenAlign_[3] = {}; // the operands' alignments the algorithm was chosen for
};

} // namespace

llvm::Expected<std::unique_ptr<Kernel>> makeGemmKernel(const Node &n, const std::vector<const Node *> &producers,
                                                      const Node *epilogue) {
  auto producer = [&](size_t k) { return k < producers.size() ? producers[k] : nullptr; };
  for (size_t k = 0; k < producers.size(); ++k)
    if (producers[k] && !(producers[k]->is("Cast") && k < 2))
      return gemmError(n, "no cuda kernel reads an operand through " + producers[k]->describe());
  DType aType = storedType(n, producer(0), 0), bType = storedType(n, producer(1), 1);
  if (!cudaType(aType) || aType != bType || n.output()->type().dtype != DType::F32)
    return gemmError(n, "no cuda kernel for a matmul of " + dtypeName(aType) + " by " + dtypeName(bType) + " into " +
                            dtypeName(n.output()->type().dtype) +
                            " (operands both float32, bf16 or fp16; a float32 result)");
  bool linear = n.is("Linear", "partita"), gemm = n.is("Gemm");
  bool bTransposed = linear ? n.intAttr("trans_b", 0) != 0 : gemm && n.intAttr("transB", 0) != 0;
  float alpha = gemm ? static_cast<float>(n.floatAttr("alpha", 1.0)) : 1.0f;
  bool bias = false;
  Shape out = n.output()->type().shape;
  if (linear && n.numInputs() > 2 && n.input(2)) {
    if (n.input(2)->type().shape.size() != 1 || n.input(2)->type().dtype != DType::F32)
      return gemmError(n, "no cuda kernel for a bias that is not a float32 vector");
    bias = true;
  }
  if (gemm) {
    if (n.intAttr("transA", 0))
      return gemmError(n, "no cuda kernel for Gemm with transA");
    const Value *c = n.numInputs() > 2 ? n.input(2) : nullptr;
    if (c) {
      bool biasLike = n.floatAttr("beta", 1.0) == 1.0 && c->type().shape.size() == 1 && c->type().shape[0] == out[1];
      if (!biasLike)
        return gemmError(n, "no cuda kernel for Gemm's C other than a bias vector (beta 1)");
      bias = true;
    }
  }
  cublasLtEpilogue_t ep = bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
  if (epilogue) {
    if (epilogue->is("Relu"))
      ep = bias ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_RELU;
    else if (epilogue->is("FastGelu", "partita"))
      ep = bias ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU;
    else
      return gemmError(n, "no cuda epilogue for " + epilogue->describe());
  }
  auto plan = planGemm(n.input(0)->type().shape, n.input(1)->type().shape, bTransposed);
  if (!plan)
    return gemmError(n, "no cuda kernel for " + llvm::toString(plan.takeError()));
  auto lt = cublasLt();
  if (!lt)
    return gemmError(n, llvm::toString(lt.takeError()));
  auto kernel = std::make_unique<GemmKernel>(**lt);
  if (auto err = kernel->init(n, *plan, aType, bType, bias, ep, alpha))
    return std::move(err);
  return std::unique_ptr<Kernel>(std::move(kernel));
}

} // namespace partita::rt::cuda
