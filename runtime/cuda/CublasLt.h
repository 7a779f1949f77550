//===- CublasLt.h - cuBLASLt, opened on first use -------------------------===//
//
// cuBLASLt's initialisers cost about half a second of CPU in every process
// that links it, GPU or not (measured: an empty program linked with
// -lcublasLt takes 0.49 s here, 0.00 s with cudart or NCCL). A CUDA build's
// `partita` serves CPU runs too, and its tests start thousands of processes,
// so the library is opened with dlopen when the first GEMM kernel is made,
// and its functions are called through this table.
//===----------------------------------------------------------------------===//
#ifndef PARTITA_RUNTIME_CUDA_CUBLASLT_H
#define PARTITA_RUNTIME_CUDA_CUBLASLT_H

#include "llvm/Support/Error.h"
#include <cublasLt.h>
#include <string>

namespace partita::rt::cuda {

/// The cuBLASLt functions Partita calls.
#define PARTITA_CUBLASLT_FUNCTIONS(X)                                                                               \
  X(cublasLtCreate)                                                                                                 \
  X(cublasLtDestroy)                                                                                                \
  X(cublasLtGetStatusString)                                                                                        \
  X(cublasLtMatmul)                                                                                                 \
  X(cublasLtMatmulAlgoGetHeuristic)                                                                                 \
  X(cublasLtMatmulDescCreate)                                                                                       \
  X(cublasLtMatmulDescDestroy)                                                                                      \
  X(cublasLtMatmulDescSetAttribute)                                                                                 \
  X(cublasLtMatmulPreferenceCreate)                                                                                 \
  X(cublasLtMatmulPreferenceDestroy)                                                                                \
  X(cublasLtMatmulPreferenceSetAttribute)                                                                           \
  X(cublasLtMatrixLayoutCreate)                                                                                     \
  X(cublasLtMatrixLayoutDestroy)                                                                                    \
  X(cublasLtMatrixLayoutSetAttribute)

/// Each member has the name and type of the function it points to.
struct CublasLt {
#define PARTITA_CUBLASLT_MEMBER(f) decltype(&::f) f = nullptr;
  PARTITA_CUBLASLT_FUNCTIONS(PARTITA_CUBLASLT_MEMBER)
#undef PARTITA_CUBLASLT_MEMBER
};

/// Opens `soname` (as the dynamic loader finds libraries) and resolves every
/// function; an error names the library and dlerror's reason or the missing
/// function. The library is never closed.
llvm::Expected<CublasLt> openCublasLt(const std::string &soname);

/// The library of the major version Partita was compiled against
/// (libcublasLt.so.<major>, found as the dynamic loader finds libraries),
/// opened once per process and never closed. An error names the library
/// and the missing function or dlerror's reason.
llvm::Expected<const CublasLt *> cublasLt();

} // namespace partita::rt::cuda

#endif
