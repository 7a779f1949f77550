//===- CompileOptions.cpp - the options' checks ---------------------------===//
#include "driver/CompileOptions.h"
#include "compiler/support/FormatNumber.h"
#include "llvm/ADT/Twine.h"
#include <cmath>

namespace partita {

static llvm::Error fail(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

llvm::Error validate(const CompileOptions &o) {
  if (o.tp < 1 || o.pp < 1 || o.dp < 1)
    return fail("--tp, --pp and --dp must be >= 1");
  if (!o.ppCuts.empty() && (!o.ppLayers.empty() || o.virtualStages > 1))
    return fail("--pp-cuts places every stage itself: it goes with neither --pp-layers nor --virtual-stages");
  if (o.virtualStages < 1 || o.virtualStages > 1024 || o.pp > 1 << 16)
    return fail(o.virtualStages < 1 || o.virtualStages > 1024 ? "--virtual-stages must be in [1, 1024]"
                                                              : "--pp must be at most 65536");
  if (o.virtualStages > 1 && (o.pp < 2 || !o.train))
    return fail("--virtual-stages " + llvm::Twine(o.virtualStages) + " interleaves the stages of a pipeline's "
                "training: it needs --pp > 1 and --train");
  if (!o.ppLayers.empty() && static_cast<int>(o.ppLayers.size()) != o.pp * o.virtualStages)
    return fail("--pp-layers gives " + llvm::Twine(o.ppLayers.size()) + " stage(s), --pp" +
                (o.virtualStages > 1 ? " x --virtual-stages is " : " is ") + llvm::Twine(o.pp * o.virtualStages));
  if (o.recompute != "none" && o.recompute != "selective" && o.recompute != "full")
    return fail("--recompute " + o.recompute + ": none, selective or full");
  if (o.precision != "fp32" && o.precision != "bf16" && o.precision != "fp16")
    return fail("--precision " + o.precision + ": fp32, bf16 or fp16");
  if (o.precision != "fp32" && !o.train)
    return fail("--precision " + o.precision + " needs --train (mixed precision is a training layout)");
  if (o.recompute != "none" && !o.train)
    return fail("--recompute " + o.recompute +
                " needs --train (it trades the backward's saved activations for compute)");
  if (o.pp > 1 && o.emitGradients && !o.train)
    return fail("--emit-gradients returns every gradient from one program; with --pp use --train");
  if (o.zero < 0 || o.zero > 3)
    return fail("--zero " + llvm::Twine(o.zero) + ": ZeRO stages are 0 to 3");
  if (o.zero > 0 && !o.train)
    return fail("--zero " + llvm::Twine(o.zero) + " needs --train (ZeRO partitions the optimizer's state)");
  for (auto [flag, value] : {std::pair{"zero3-prefetch-elements", o.zero3Prefetch},
                             std::pair{"zero3-persistence-threshold", o.zero3Persist}})
    if (value && o.zero != 3)
      return fail("--" + llvm::Twine(flag) + " applies to --zero 3 (this compile has --zero " + llvm::Twine(o.zero) +
                  ")");
  if (o.zero3Prefetch.value_or(-1) < -1 || o.zero3Persist.value_or(0) < 0)
    return fail(o.zero3Persist.value_or(0) < 0 ? "--zero3-persistence-threshold must be >= 0 elements"
                                               : "--zero3-prefetch-elements must be >= 0 elements");
  if (o.sequenceParallel && o.tp == 1)
    return fail("--sequence-parallel needs --tp > 1");
  const AdamWOptions &a = o.adamw;
  if (!std::isfinite(a.weightDecay) || a.weightDecay < 0)
    return fail("--weight-decay " + formatNumber(a.weightDecay) + ": must be a finite number >= 0");
  for (auto [flag, beta] : {std::pair{"adam-beta1", a.beta1}, std::pair{"adam-beta2", a.beta2}})
    if (!(beta >= 0 && beta < 1))
      return fail("--" + llvm::Twine(flag) + " " + formatNumber(beta) + ": must be in [0, 1)");
  for (auto [flag, mb] : {std::pair{"bucket-mb", o.bucketMb}, std::pair{"allgather-bucket-mb", o.allgatherBucketMb}})
    if (!(mb >= 0) || !std::isfinite(mb))
      return fail("--" + llvm::Twine(flag) + " " + formatNumber(mb) + ": must be a finite number >= 0");
  if (!(a.eps > 0) || !std::isfinite(a.eps))
    return fail("--adam-eps " + formatNumber(a.eps) + ": must be a finite number > 0");
  if (o.tieEmbeddings && o.untieEmbeddings)
    return fail("--tie-embeddings and --untie-embeddings contradict each other: give one");
  if (!o.emitGradients && !o.train && (!o.freeze.empty() || !o.trainable.empty() || !o.trainableFile.empty()))
    return fail("--freeze, --trainable and --trainable-file need --train or --emit-gradients");
  return llvm::Error::success();
}

} // namespace partita
