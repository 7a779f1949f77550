//===- DsConfigSections.cpp - what each DeepSpeed key maps to -------------===//
//
// One function per part of the config, each reading the keys of one section
// for the command resolving it (compile: --zero, --bucket-mb, AdamW's
// hyper-parameters; launch: --batch, --micro-batches, --lr, the schedule,
// --clip-grad-norm, --no-overlap). The semantics are DeepSpeed's
// (deepspeed/runtime/config.py, lr_schedules.py, engine.py).
//===----------------------------------------------------------------------===//
#include "tools/DsConfigReader.h"
#include "llvm/ADT/StringExtras.h"
#include <algorithm>
#include <climits>
#include <cmath>
#include <limits>

namespace partita::ds {

static constexpr double kInf = std::numeric_limits<double>::infinity();

/// The section's "type": one of `allowed`, else an error saying what Partita has.
static std::optional<std::string> typeOf(const Section &s, llvm::ArrayRef<llvm::StringRef> allowed, bool anyCase,
                                         llvm::StringRef has) {
  const llvm::json::Value *v = s.get("type");
  if (!v) {
    s.reader().fail(s.path("type") + ": missing (" + has.str() + ")");
    return std::nullopt;
  }
  auto name = v->getAsString();
  if (!name) {
    s.typeError("type", "a string", *v);
    return std::nullopt;
  }
  for (llvm::StringRef a : allowed)
    if (anyCase ? name->equals_insensitive(a) : *name == a)
      return a.str();
  s.reader().fail(s.path("type") + ": \"" + name->str() + "\" is not implemented (" + has.str() + ")");
  return std::nullopt;
}

void mapBatch(const Section &top, const DsContext &ctx) {
  Reader &r = top.reader();
  DsBatch b;
  b.train = top.integer("train_batch_size", 1, INT32_MAX, "a positive integer");
  b.micro = top.integer("train_micro_batch_size_per_gpu", 1, INT32_MAX, "a positive integer");
  b.accumulation = top.integer("gradient_accumulation_steps", 1, INT32_MAX, "a positive integer");
  if (!r.error.empty())
    return;
  DsBatch file = b;
  std::string microLabel = "train_micro_batch_size_per_gpu", accumulationLabel = "gradient_accumulation_steps";
  if (ctx.batch) { // a flag given overrides its key, in the rule too
    b.micro = ctx.batch;
    microLabel = "--batch";
  }
  if (ctx.microBatches) {
    b.accumulation = ctx.microBatches;
    accumulationLabel = "--micro-batches";
  }
  llvm::Expected<DsBatch> solved = solveBatchRule(b, ctx.dp, microLabel, accumulationLabel);
  if (!solved) {
    r.fail(llvm::toString(solved.takeError()));
    return;
  }
  if (solved->micro) {
    r.out.microBatch = solved->micro;
    std::string dp = "dp " + std::to_string(ctx.dp);
    if (b.micro)
      r.out.microBatchFrom = microLabel + " " + std::to_string(*b.micro);
    else if (b.accumulation)
      r.out.microBatchFrom = "train_batch_size " + std::to_string(*b.train) + " / (" + accumulationLabel + " " +
                             std::to_string(*b.accumulation) + " x " + dp + ") = " + std::to_string(*solved->micro);
    else
      r.out.microBatchFrom = "train_batch_size " + std::to_string(*b.train) + " / " + dp + " = " +
                             std::to_string(*solved->micro);
  }
  if (ctx.tool != DsTool::Launch)
    return;
  if (solved->micro && !ctx.batch)
    r.set("batch", std::to_string(*solved->micro),
          file.micro ? "train_micro_batch_size_per_gpu" : "train_batch_size");
  if (solved->accumulation && !ctx.microBatches)
    r.set("micro-batches", std::to_string(*solved->accumulation),
          file.accumulation ? "gradient_accumulation_steps" : "train_batch_size");
}

void mapPrecision(const Section &top, const DsContext &ctx) {
  Reader &r = top.reader();
  Section fp16 = top.object("fp16");
  std::string enabled; // the key that enables a half type
  for (const char *name : {"fp16", "bf16", "bfloat16"}) {
    Section s = top.object(name);
    if (!s.boolean("enabled").value_or(false))
      continue; // its other keys (loss scaling) do nothing while it is disabled, in DeepSpeed too
    if (!enabled.empty())
      return r.fail(s.path("enabled") + ": " + enabled + " enables another half type: enable one");
    enabled = s.path("enabled");
    r.out.precision = name == std::string("fp16") ? "fp16" : "bf16";
    r.out.precisionFrom = enabled;
    if (ctx.tool == DsTool::Compile)
      r.set("precision", r.out.precision, enabled);
  }
  if (ctx.tool != DsTool::Launch || enabled != fp16.path("enabled"))
    return;
  // DeepSpeed's fp16 keys (runtime/fp16/loss_scaler.py); loss_scale 0 is dynamic.
  if (auto v = fp16.number("loss_scale", 0, kInf, false, "a number >= 0 (0: dynamic)"))
    r.set("loss-scale", flagNumber(*v), fp16.path("loss_scale"));
  if (auto v = fp16.integer("initial_scale_power", 0, 100, "an integer 0-100"))
    r.set("initial-scale-power", std::to_string(*v), fp16.path("initial_scale_power"));
  if (auto v = fp16.integer("loss_scale_window", 1, INT64_MAX, "an integer >= 1"))
    r.set("loss-scale-window", std::to_string(*v), fp16.path("loss_scale_window"));
  if (auto v = fp16.integer("hysteresis", 1, INT32_MAX, "an integer >= 1"))
    r.set("hysteresis", std::to_string(*v), fp16.path("hysteresis"));
  if (auto v = fp16.number("min_loss_scale", 0, kInf, true, "a number > 0"))
    r.set("min-loss-scale", flagNumber(*v), fp16.path("min_loss_scale"));
  fp16.notImplementedExcept({"enabled", "loss_scale", "initial_scale_power", "loss_scale_window", "hysteresis",
                             "min_loss_scale"});
}

void mapOptimizer(const Section &top, const DsContext &ctx) {
  Section opt = top.object("optimizer");
  if (!opt.present())
    return;
  Reader &r = top.reader();
  std::optional<std::string> type =
      typeOf(opt, {"AdamW", "Adam"}, /*anyCase=*/true, "Partita's optimizer is AdamW: give \"AdamW\" or \"Adam\"");
  Section p = opt.object("params");
  std::optional<double> lr = p.number("lr", 0, kInf, true, "a number > 0");
  std::optional<std::vector<double>> betas = p.numbers("betas", 2, "[beta1, beta2], each in [0, 1)");
  for (size_t i = 0; betas && i < 2; ++i)
    if (!((*betas)[i] >= 0 && (*betas)[i] < 1))
      p.typeError("betas", "[beta1, beta2], each in [0, 1)", *p.get("betas"));
  std::optional<double> eps = p.number("eps", 0, kInf, true, "a number > 0");
  // DeepSpeed's FusedAdam default: no weight decay (Partita's own default is torch's 0.01).
  double weightDecay = p.number("weight_decay", 0, kInf, false, "a number >= 0").value_or(0);
  // DeepSpeed's "Adam" is AdamW (decoupled decay) unless adam_w_mode is false (engine.py).
  bool decoupled = p.boolean("adam_w_mode").value_or(true) || (type && *type == "AdamW");
  p.boolean("torch_adam"); // torch's or DeepSpeed's kernel: the same math
  if (p.boolean("amsgrad").value_or(false))
    r.fail(p.path("amsgrad") + ": AMSGrad is not implemented (Partita's optimizer is AdamW): set it to false");
  if (!p.boolean("bias_correction").value_or(true))
    r.fail(p.path("bias_correction") + ": Partita's AdamW always corrects the moments' bias: set it to true");
  if (type && !decoupled && weightDecay > 0)
    r.fail(opt.path("type") + ": \"" + *type + "\" with \"adam_w_mode\": false adds weight_decay " +
           flagNumber(weightDecay) + " to the gradient (L2, as torch.optim.Adam); Partita has only AdamW's "
           "decoupled weight decay: use \"AdamW\", or weight_decay 0");
  if (ctx.tool == DsTool::Launch) {
    if (lr)
      r.set("lr", flagNumber(*lr), p.path("lr"));
    return;
  }
  std::vector<double> b = betas.value_or(std::vector<double>{0.9, 0.999}); // FusedAdam's defaults
  r.set("adam-beta1", flagNumber(b[0]), p.path("betas"));
  r.set("adam-beta2", flagNumber(b[1]), p.path("betas"));
  r.set("adam-eps", flagNumber(eps.value_or(1e-8)), p.path("eps"));
  r.set("weight-decay", flagNumber(weightDecay), p.path("weight_decay"));
  static const std::set<std::string> used{"lr", "betas", "eps", "weight_decay", "adam_w_mode", "torch_adam",
                                          "amsgrad", "bias_correction"};
  p.notImplementedExcept(used);
  opt.notImplementedExcept({"type", "params"});
}

void mapZero(const Section &top, const DsContext &ctx) {
  Section z = top.object("zero_optimization");
  if (!z.present())
    return;
  Reader &r = top.reader();
  std::optional<int64_t> stage = z.integer("stage", 0, 3, "an integer 0-3");
  std::optional<int64_t> bucket =
      z.integer("reduce_bucket_size", 0, std::numeric_limits<int64_t>::max() / 8, "an integer >= 0 (elements)");
  std::optional<int64_t> gatherBucket =
      z.integer("allgather_bucket_size", 0, std::numeric_limits<int64_t>::max() / 8, "an integer >= 0 (elements)");
  std::optional<bool> overlap = z.boolean("overlap_comm");
  if (ctx.tool == DsTool::Launch) {
    // Partita overlaps the gradient all-reduces with the backward by default.
    if (overlap && !*overlap)
      r.set("no-overlap", "true", z.path("overlap_comm"));
    // Where the optimizer step runs is the launch's choice, not the programs'.
    Section offload = z.object("offload_optimizer");
    if (offload.present()) {
      std::optional<std::string> device = offload.choice("device", {"cpu", "none", "nvme"}, /*anyCase=*/false);
      if (device == "nvme")
        r.fail(offload.path("device") + ": \"nvme\" is not implemented (Partita offloads the optimizer to \"cpu\")");
      else if (device == "cpu")
        r.set("offload-optimizer", "true", offload.path("device"));
      offload.notImplementedExcept({"device", "pin_memory"}); // pinned or not, the host's memory is read alike here
    }
    return;
  }
  if (stage)
    r.set("zero", std::to_string(*stage), z.path("stage"));
  // DeepSpeed counts a bucket in elements, Partita in megabytes (1e6 bytes):
  // the gradients are fp32, 4 bytes an element.
  if (bucket)
    r.set("bucket-mb", flagNumber(static_cast<double>(*bucket) * 4 / 1e6), z.path("reduce_bucket_size"));
  if (gatherBucket) // counted the same way
    r.set("allgather-bucket-mb", flagNumber(static_cast<double>(*gatherBucket) * 4 / 1e6),
          z.path("allgather_bucket_size"));
  // Stage 3's prefetch and persistence, in elements as DeepSpeed counts them;
  // they mean nothing at another stage (DeepSpeed ignores them there too).
  constexpr int64_t kMaxElements = std::numeric_limits<int64_t>::max() / 8;
  std::optional<int64_t> prefetch = z.integer("stage3_prefetch_bucket_size", 0, kMaxElements, "an integer >= 0 (elements)");
  std::optional<int64_t> persist =
      z.integer("stage3_param_persistence_threshold", 0, kMaxElements, "an integer >= 0 (elements)");
  if (stage && *stage == 3) {
    if (prefetch)
      r.set("zero3-prefetch-elements", std::to_string(*prefetch), z.path("stage3_prefetch_bucket_size"));
    if (persist)
      r.set("zero3-persistence-threshold", std::to_string(*persist), z.path("stage3_param_persistence_threshold"));
  }
  z.notImplementedExcept({"stage", "reduce_bucket_size", "allgather_bucket_size", "overlap_comm",
                          "offload_optimizer", // launch reads it
                          "stage3_prefetch_bucket_size",
                          "stage3_param_persistence_threshold"});
}

void mapScheduler(const Section &top, const DsContext &ctx) {
  Section s = top.object("scheduler");
  if (!s.present())
    return;
  Reader &r = top.reader();
  s.notImplementedExcept({"type", "params"});
  std::optional<std::string> type = typeOf(s, {"WarmupLR", "WarmupDecayLR", "WarmupCosineLR"}, /*anyCase=*/false,
                                           "Partita's schedules: WarmupLR, WarmupDecayLR, WarmupCosineLR");
  if (!type)
    return;
  bool cosine = *type == "WarmupCosineLR", decay = *type == "WarmupDecayLR";
  Section p = s.object("params");
  // DeepSpeed passes the params to the scheduler's constructor: another name is a TypeError there too.
  std::set<std::string> allowed{"warmup_num_steps", "warmup_type", "last_batch_iteration"};
  if (cosine)
    allowed.insert({"total_num_steps", "warmup_min_ratio", "cos_min_ratio"});
  else
    allowed.insert({"warmup_min_lr", "warmup_max_lr"});
  if (decay)
    allowed.insert("total_num_steps");
  for (const std::string &key : p.keys())
    if (!allowed.count(key))
      r.fail(p.path(key) + ": not a parameter of " + *type);
  p.integer("last_batch_iteration", -1, -1, "-1 (resuming a schedule is not implemented)");
  int64_t warmup = p.integer("warmup_num_steps", 0, INT32_MAX, "an integer >= 0").value_or(1000);
  std::string warmupType = p.choice("warmup_type", {"log", "linear"}, false).value_or("log");
  if (warmup > 0 && warmupType == "log")
    r.fail(p.path("warmup_type") + ": \"log\"" + (p.has("warmup_type") ? "" : " (DeepSpeed's default)") +
           " warms up logarithmically, Partita linearly: give \"warmup_type\": \"linear\" (or warmup_num_steps 0)");
  std::optional<int64_t> total;
  if (cosine || decay) {
    total = p.integer("total_num_steps", 1, INT32_MAX, "a positive integer");
    if (!p.has("total_num_steps"))
      r.fail(p.path("total_num_steps") + ": missing (" + *type + " decays over it)");
  }
  std::string rampStart = cosine ? "warmup_min_ratio" : "warmup_min_lr";
  if (cosine) {
    double start = p.number("warmup_min_ratio", 0, 1, false, "a number in [0, 1]").value_or(0);
    double end = p.number("cos_min_ratio", 0, 1, false, "a number in [0, 1]").value_or(1e-4); // DeepSpeed's default
    if (warmup > 0 && start != 0)
      r.fail(p.path("warmup_min_ratio") + ": Partita's warmup starts from 0: give 0 (or warmup_num_steps 0)");
    r.set("lr-schedule", "cosine", s.path("type"));
    r.set("min-lr-ratio", flagNumber(end), p.path("cos_min_ratio"));
  } else { // WarmupLR and WarmupDecayLR replace the optimizer's rate with warmup_max_lr
    double minLr = p.number("warmup_min_lr", 0, kInf, false, "a number >= 0").value_or(0);
    double maxLr = p.number("warmup_max_lr", 0, kInf, true, "a number > 0").value_or(0.001);
    if (warmup > 0 && minLr != 0)
      r.fail(p.path("warmup_min_lr") + ": Partita's warmup starts from 0, DeepSpeed's from warmup_min_lr: give 0 "
                                       "(or warmup_num_steps 0)");
    if (minLr > maxLr)
      r.fail(p.path("warmup_min_lr") + ": " + flagNumber(minLr) + " is above warmup_max_lr " + flagNumber(maxLr));
    r.set("lr", flagNumber(maxLr), p.path("warmup_max_lr"));
    r.set("lr-schedule", decay ? "linear" : "constant", s.path("type"));
    if (decay && maxLr > 0) // the decay ends at warmup_min_lr
      r.set("min-lr-ratio", flagNumber(minLr / maxLr), p.path("warmup_min_lr"));
  }
  r.set("warmup-steps", std::to_string(warmup), p.path("warmup_num_steps"));
  if (total) {
    if (ctx.steps && *ctx.steps != *total)
      r.fail(p.path("total_num_steps") + " " + std::to_string(*total) + " is not --steps " +
             std::to_string(*ctx.steps) + ": Partita's schedule decays over the run (give --steps " +
             std::to_string(*total) + ", or leave --steps out)");
    else
      r.set("steps", std::to_string(*total), p.path("total_num_steps"));
  }
  // DeepSpeed sets the rate for step k+1 after optimizer step k (engine.py),
  // from warmup_min_lr (WarmupCosineLR: 0) at step 1, and warms up over at
  // least 2 steps: its first steps cannot be Partita's.
  int64_t late = std::max<int64_t>(2, warmup) + 1;
  r.warn("scheduler", "ds-config key 'scheduler': DeepSpeed updates the learning rate after each optimizer step, "
                      "starting from " + (cosine ? std::string("0") : rampStart) + " at step 1, and warms up over at "
                      "least 2 steps: the learning rates of the first " + std::to_string(late) + " steps differ from "
                      "Partita's, " + (warmup > 0 ? "which warms up linearly to the full rate at step " +
                      std::to_string(warmup) : std::string("which runs at the full rate from step 1")) +
                      (decay ? "; and DeepSpeed's linear decay runs one step behind Partita's" : ""));
}

void mapLaunchScalars(const Section &top) {
  Reader &r = top.reader();
  if (std::optional<double> clip = top.number("gradient_clipping", 0, kInf, false, "a number >= 0 (0: off)"))
    r.set("clip-grad-norm", flagNumber(*clip), "gradient_clipping");
  if (top.integer("steps_per_print", 1, INT32_MAX, "a positive integer"))
    r.notImplemented("steps_per_print", "launch prints every step");
}

} // namespace partita::ds
