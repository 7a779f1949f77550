//===- GemmKernel.h - MatMul, partita.Linear and Gemm on cuBLASLt ----------===//
//
// One cuBLASLt matmul per node (GemmPlan.h says how row-major tensors map onto
// it). The operation and layout descriptors are made when the kernel is made
// (no GPU needed: inspect and the tests build them); the algorithm is chosen
// by cuBLASLt's heuristic on the first run, for the device it runs on, within
// the kernel's workspace (scratch, shared by the programs' kernels).
// float32 operands compute in float32 (TF32 with PARTITA_CUDA_TF32=1); bf16
// or fp16 operands (read through the widening Casts mixed precision makes)
// multiply on tensor cores with float32 accumulation and a float32 result.
// Epilogues: Linear's bias, and ReLU or the tanh GELU (partita.FastGelu,
// cuBLASLt's GELU; the erf GELU runs as its own kernel).
//===----------------------------------------------------------------------===//
#pragma once
#include "compiler/ir/Graph.h"
#include "runtime/kernels/Kernel.h"
#include <vector>

namespace partita::rt::cuda {

/// The kernel for `node` (MatMul, partita.Linear or Gemm), its operands read
/// through `producers[k]` (a widening Cast, or null), with `epilogue` (Relu,
/// partita.FastGelu, or null) fused; an error naming the node when cuBLASLt
/// cannot express it.
llvm::Expected<std::unique_ptr<Kernel>> makeGemmKernel(const Node &node, const std::vector<const Node *> &producers,
                                                      const Node *epilogue);

/// cuBLASLt's workspace for one matmul (NVIDIA's advice for Hopper).
constexpr size_t kGemmWorkspace = size_t(32) << 20;

} // namespace partita::rt::cuda
