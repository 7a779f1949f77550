//===- GradientClipping.cpp -----------------------------------------------===//
#include "runtime/train/GradientClipping.h"
#include "compiler/plan/Names.h"
#include "runtime/core/DeviceTensor.h"
#include <algorithm>
#include <cmath>

namespace partita::rt {

llvm::Expected<double> globalGradientNorm(Program &gradNorm, llvm::ArrayRef<std::string> names,
                                          llvm::ArrayRef<const TensorView *> params, llvm::ArrayRef<TensorView> grads) {
  llvm::StringMap<TensorView> feeds;
  for (size_t i = 0; i < names.size(); ++i) {
    // Shaped as the program reads it: like the parameter, or (ZeRO-2) the rank's part.
    const TensorType *t = gradNorm.inputType(optimizer_io::gradient(names[i]));
    if (!t) // a stage's copy of a shared weight: counted where the weight is
      continue;
    feeds[optimizer_io::gradient(names[i])] = TensorView{grads[i].dtype, t->shape, grads[i].data};
  }
  auto outs = gradNorm.run(feeds);
  if (!outs)
    return outs.takeError();
  if (outs->size() != 1 || outs->front().dtype != DType::F32 || outs->front().numel() != 1)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "the grad_norm program must return one f32 scalar");
  return static_cast<double>(downloadScalar(gradNorm.device(), outs->front().data));
}

double clipCoefficient(double norm, double maxNorm) { return std::min(1.0, maxNorm / (norm + 1e-6)); }

} // namespace partita::rt
