//===- GemmPlan.cpp -------------------------------------------------------===//
#include "runtime/cuda/GemmPlan.h"
#include "llvm/ADT/Twine.h"
#include <algorithm>
#include <string>

namespace partita::rt::cuda {

namespace {

std::string str(const Shape &s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i)
    out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

int64_t product(const Shape &s, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to; ++i)
    p *= s[i];
  return p;
}

} // namespace

llvm::Expected<GemmPlan> planGemm(const Shape &aIn, const Shape &bIn, bool bTransposed) {
  auto refuse = [&](const llvm::Twine &why) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "a matmul of " + str(aIn) + " and " + str(bIn) + ": " + why);
  };
  if (aIn.empty() || bIn.empty())
    return refuse("a scalar operand");
  Shape a = aIn, b = bIn;
  if (a.size() == 1) // [K] -> [1, K]
    a.insert(a.begin(), 1);
  if (b.size() == 1 && !bTransposed) // [K] -> [K, 1]
    b.push_back(1);
  if (bTransposed && b.size() != 2)
    return refuse("a transposed right operand must be 2-D");
  int64_t M = a[a.size() - 2], K = a.back();
  int64_t N = bTransposed ? b[0] : b.back(), Kb = bTransposed ? b[1] : b[b.size() - 2];
  if (K != Kb)
    return refuse("inner dimensions differ");
  Shape batchA(a.begin(), a.end() - 2), batchB(b.begin(), b.end() - 2);
  int64_t countA = product(a, 0, a.size() - 2), countB = product(b, 0, b.size() - 2);
  GemmPlan p;
  p.m = N;
  p.k = K;
  p.transFirst = bTransposed;
  p.ldFirst = bTransposed ? K : N;
  p.ldSecond = K;
  p.ldResult = N;
  if (countB == 1) { // only A has batches: its rows stack into one product
    p.n = countA * M;
    return p;
  }
  // Both batched: the batch dims must broadcast to one of them whole.
  size_t rank = std::max(batchA.size(), batchB.size());
  auto at = [&](const Shape &s, size_t i) { // right-aligned, 1 where absent
    size_t pad = rank - s.size();
    return i < pad ? int64_t(1) : s[i - pad];
  };
  bool equal = true;
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = at(batchA, i), db = at(batchB, i);
    if (da != db && da != 1 && db != 1)
      return refuse("batch dimensions do not broadcast");
    equal &= da == db;
  }
  p.n = M;
  p.strideFirst = K * N;
  p.strideSecond = M * K;
  p.strideResult = M * N;
  if (equal) {
    p.batch = countA;
    return p;
  }
  if (countA == 1) { // A broadcast over B's batches
    p.batch = countB;
    p.strideSecond = 0;
    return p;
  }
  return refuse("batch dimensions broadcast partly (each operand would need its own strides per dimension)");
}

} // namespace partita::rt::cuda
