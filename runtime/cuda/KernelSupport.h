//===- KernelSupport.h - what every CUDA Kernel class uses ------------------===//
#pragma once
#include "compiler/ir/Graph.h"
#include "runtime/cuda/CudaDevice.h"
#include "runtime/cuda/GpuKernels.h"
#include "runtime/kernels/Kernel.h"
#include "llvm/ADT/Twine.h"

namespace partita::rt::cuda {

/// The stream a kernel enqueues on: its device's compute stream.
inline cudaStream_t streamOf(Device &device) { return static_cast<CudaDevice &>(device).computeStream(); }

/// The load error of a node the cuda device has no kernel for, saying why.
inline llvm::Error refuse(const Node &n, const llvm::Twine &why) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "node " + n.describe() + ": no cuda kernel for " + why);
}

/// A kernel reading its input through `p`'s strides (elements of 1, 2, 4 or
/// 8 bytes): Transpose, Expand (CudaKernels.cpp).
std::unique_ptr<Kernel> makeStridedRead(const gpu::Permute &p, int elementBytes);

} // namespace partita::rt::cuda
