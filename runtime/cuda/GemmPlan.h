//===- GemmPlan.h - a matmul of row-major tensors as one cuBLASLt call -----===//
//
// cuBLAS is column-major; a row-major tensor read column-major is its
// transpose. So C = A B of row-major [M, K] and [K, N] is computed as the
// column-major C^T = B^T A^T: cuBLAS's first operand is our B (N x K, or
// K x N transposed when B is stored [N, K], Linear's trans_b), its second our
// A (K x M), its result C (N x M, leading dimension N). numpy's batch
// dimensions map onto strided batches (a broadcast operand gets stride 0), or
// fold into M when only A has them (its rows are contiguous).
// Pure arithmetic on shapes: no GPU needed (tested on the CPU).
//===----------------------------------------------------------------------===//
#pragma once
#include "compiler/ir/Tensor.h"
#include "llvm/Support/Error.h"
#include <cstdint>

namespace partita::rt::cuda {

struct GemmPlan {
  int64_t m = 0, n = 0, k = 0; // cuBLAS's: m = N (output columns), n = M (rows, batches folded), k = K
  bool transFirst = false;     // cuBLAS's first operand (our B) is transposed: B stored [N, K]
  int64_t ldFirst = 0, ldSecond = 0, ldResult = 0;
  int64_t batch = 1;
  int64_t strideFirst = 0, strideSecond = 0, strideResult = 0; // elements between batches (0: broadcast)
  /// Rows (stored) and columns of the first operand as cuBLAS sees it stored.
  int64_t firstRows() const { return transFirst ? k : m; }
  int64_t firstCols() const { return transFirst ? m : k; }
};

/// The plan for numpy's matmul(a, b) (b stored [N, K] when `bTransposed`),
/// or an error saying which broadcast no single strided call expresses.
llvm::Expected<GemmPlan> planGemm(const Shape &a, const Shape &b, bool bTransposed);

} // namespace partita::rt::cuda
