//===- GradientClipping.cpp -----------------------------------------------===//
#include "runtime/train/GradientClipping.h"
#include <algorithm>
#include <cmath>

namespace partita::rt {

llvm::Expected<double> globalGradientNorm(llvm::ArrayRef<GradientShard> grads, Communicator *tp, double scale) {
  double shardedSq = 0, replicatedSq = 0;
  for (const GradientShard &g : grads) {
    const float *p = g.data;
    int64_t count = g.count;
    double sq = 0;
#pragma omp parallel for reduction(+ : sq) if (count > (1 << 16))
    for (int64_t k = 0; k < count; ++k)
      sq += double(p[k]) * p[k];
    (g.sharded ? shardedSq : replicatedSq) += sq;
  }
  if (tp && tp->size() > 1)
    if (auto err = tp->allReduce(&shardedSq, 1, DType::F64))
      return std::move(err);
  return scale * std::sqrt(shardedSq + replicatedSq);
}

double clipCoefficient(double norm, double maxNorm) { return std::min(1.0, maxNorm / (norm + 1e-6)); }

} // namespace partita::rt
