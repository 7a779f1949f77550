// --ds-config: DeepSpeed's batch rule, the flags each key maps to, and the
// errors and warnings. Expected values are worked out by hand from
// DeepSpeed's semantics (runtime/config.py's batch rule, FusedAdam's
// defaults, engine.py's Adam/AdamW choice, lr_schedules.py), not from the
// parser.
#include "tools/DsConfig.h"
#include "llvm/Support/CommandLine.h"
#include <gtest/gtest.h>
#include <map>

using namespace partita;

namespace {

DsContext launchCtx(int64_t dp = 1) {
  DsContext c;
  c.tool = DsTool::Launch;
  c.dp = dp;
  return c;
}

DsContext compileCtx(int64_t dp = 1) {
  DsContext c;
  c.dp = dp;
  return c;
}

std::map<std::string, std::string> flagsOf(const DsMapping &m) {
  std::map<std::string, std::string> out;
  for (const DsSetting &s : m.settings)
    out[s.flag] = s.value;
  return out;
}

DsMapping resolved(const std::string &json, const DsContext &ctx) {
  auto m = resolveDsConfig(json, "ds.json", ctx);
  if (!m) {
    ADD_FAILURE() << llvm::toString(m.takeError());
    return {};
  }
  return *m;
}

std::string errorOf(const std::string &json, const DsContext &ctx) {
  auto m = resolveDsConfig(json, "ds.json", ctx);
  if (m) {
    ADD_FAILURE() << "expected an error for " << json;
    return "";
  }
  return llvm::toString(m.takeError());
}

DsBatch solved(DsBatch given, int64_t dp) {
  auto b = solveBatchRule(given, dp, "train_micro_batch_size_per_gpu", "gradient_accumulation_steps");
  if (!b) {
    ADD_FAILURE() << llvm::toString(b.takeError());
    return {};
  }
  return *b;
}

} // namespace

TEST(DsConfig, BatchRuleDerivesTheThirdOfAnyTwo) {
  DsBatch b = solved({16, 2, std::nullopt}, 2); // 16 / (2 x 2)
  EXPECT_EQ(b.accumulation, 4);
  b = solved({16, std::nullopt, 4}, 2); // 16 / (4 x 2)
  EXPECT_EQ(b.micro, 2);
  b = solved({std::nullopt, 2, 4}, 2); // 2 x 4 x 2
  EXPECT_EQ(b.train, 16);
  b = solved({16, 2, 4}, 2);
  EXPECT_EQ(b.train, 16);
}

TEST(DsConfig, BatchRuleWithOneKeyAccumulatesOnce) {
  DsBatch b = solved({12, std::nullopt, std::nullopt}, 3);
  EXPECT_EQ(b.accumulation, 1);
  EXPECT_EQ(b.micro, 4);
  b = solved({std::nullopt, 5, std::nullopt}, 2);
  EXPECT_EQ(b.accumulation, 1);
  EXPECT_EQ(b.train, 10);
}

TEST(DsConfig, BatchRuleRefusesDisagreementNamingKeysAndNumbers) {
  auto b = solveBatchRule({16, 2, 2}, 2, "train_micro_batch_size_per_gpu", "gradient_accumulation_steps");
  ASSERT_FALSE(b);
  EXPECT_EQ(llvm::toString(b.takeError()),
            "train_batch_size 16 is not train_micro_batch_size_per_gpu 2 x gradient_accumulation_steps 2 x dp 2 "
            "= 8 (DeepSpeed's rule: give two of the three, or three that agree)");
  b = solveBatchRule({10, 4, std::nullopt}, 2, "train_micro_batch_size_per_gpu", "gradient_accumulation_steps");
  ASSERT_FALSE(b);
  EXPECT_NE(llvm::toString(b.takeError()).find("train_batch_size 10 is not a multiple of "
                                               "train_micro_batch_size_per_gpu 4 x dp 2 = 8"),
            std::string::npos);
}

TEST(DsConfig, LaunchTakesBatchAndAccumulationAndFlagsOverrideInTheRule) {
  DsMapping m = resolved(R"({"train_batch_size": 16, "train_micro_batch_size_per_gpu": 2})", launchCtx(2));
  auto f = flagsOf(m);
  EXPECT_EQ(f["batch"], "2");
  EXPECT_EQ(f["micro-batches"], "4");
  DsContext ctx = launchCtx(2);
  ctx.batch = 4; // --batch 4 replaces the key: 16 / (4 x 2) = 2
  f = flagsOf(resolved(R"({"train_batch_size": 16, "train_micro_batch_size_per_gpu": 2})", ctx));
  EXPECT_EQ(f.count("batch"), 0u);
  EXPECT_EQ(f["micro-batches"], "2");
  ctx.batch = 3;
  EXPECT_NE(errorOf(R"({"train_batch_size": 16})", ctx).find("train_batch_size 16 is not a multiple of --batch 3"),
            std::string::npos);
}

TEST(DsConfig, CompileKnowsTheMicroBatchItMustMatch) {
  DsMapping m = resolved(R"({"train_batch_size": 16, "gradient_accumulation_steps": 2})", compileCtx(4));
  EXPECT_EQ(m.microBatch, 2);
  EXPECT_EQ(m.microBatchFrom, "train_batch_size 16 / (gradient_accumulation_steps 2 x dp 4) = 2");
  EXPECT_TRUE(m.settings.empty() || !flagsOf(m).count("batch")); // compile has no --batch
}

TEST(DsConfig, WrongTypesNameTheKeyPath) {
  EXPECT_EQ(errorOf(R"({"zero_optimization": {"stage": "two"}})", compileCtx()),
            "ds.json: zero_optimization.stage: expected an integer 0-3, got \"two\"");
  EXPECT_EQ(errorOf(R"({"zero_optimization": {"stage": 4}})", compileCtx()),
            "ds.json: zero_optimization.stage: expected an integer 0-3, got 4");
  EXPECT_EQ(errorOf(R"({"train_batch_size": "auto"})", launchCtx()),
            "ds.json: train_batch_size: expected a positive integer, got \"auto\" (\"auto\" is filled in by the "
            "Hugging Face Trainer; give the value)");
  EXPECT_EQ(errorOf(R"({"optimizer": {"type": "AdamW", "params": {"betas": [0.9]}}})", compileCtx()),
            "ds.json: optimizer.params.betas: expected [beta1, beta2], each in [0, 1), got [0.9]");
  EXPECT_EQ(errorOf(R"({"gradient_clipping": -1})", launchCtx()),
            "ds.json: gradient_clipping: expected a number >= 0 (0: off), got -1");
  EXPECT_EQ(errorOf(R"({"zero_optimization": 2})", compileCtx()),
            "ds.json: zero_optimization: expected an object, got 2");
}

TEST(DsConfig, InvalidJsonNamesTheFileAndLine) {
  std::string e = errorOf("{\n  \"train_batch_size\": 8,\n}", launchCtx());
  EXPECT_EQ(e.rfind("ds.json: invalid JSON: [3:", 0), 0u) << e;
  EXPECT_EQ(errorOf("[1, 2]", launchCtx()), "ds.json: expected a JSON object (a DeepSpeed config), got [1,2]");
}

TEST(DsConfig, CompileMapsZeroOptimizerAndBucket) {
  auto f = flagsOf(resolved(R"({"zero_optimization": {"stage": 1, "reduce_bucket_size": 5e8},
      "optimizer": {"type": "AdamW", "params": {"lr": 3e-4, "betas": [0.8, 0.95], "eps": 1e-6,
                                                "weight_decay": 0.1}}})",
                            compileCtx()));
  EXPECT_EQ(f["zero"], "1");
  EXPECT_EQ(f["bucket-mb"], "2000"); // 5e8 fp32 elements x 4 bytes = 2000 MB
  EXPECT_EQ(f["adam-beta1"], "0.80000000000000004");
  EXPECT_EQ(f["adam-beta2"], "0.94999999999999996");
  EXPECT_EQ(f["adam-eps"], "9.9999999999999995e-07");
  EXPECT_EQ(f["weight-decay"], "0.10000000000000001");
  EXPECT_EQ(f.count("lr"), 0u); // launch's key
}

TEST(DsConfig, OptimizerDefaultsAreFusedAdams) {
  // No weight_decay: DeepSpeed's default 0, not Partita's 0.01.
  auto f = flagsOf(resolved(R"({"optimizer": {"type": "AdamW", "params": {"lr": 1e-3}}})", compileCtx()));
  EXPECT_EQ(f["weight-decay"], "0");
  EXPECT_EQ(f["adam-beta1"], "0.90000000000000002");
  EXPECT_EQ(f["adam-beta2"], "0.999");
  EXPECT_EQ(f["adam-eps"], "1e-08");
}

TEST(DsConfig, AdamIsAdamWUnlessAdamWModeIsOff) {
  // engine.py: "Adam" runs with adam_w_mode (default true): decoupled decay.
  auto f = flagsOf(resolved(R"({"optimizer": {"type": "Adam", "params": {"weight_decay": 0.01}}})", compileCtx()));
  EXPECT_EQ(f["weight-decay"], "0.01");
  std::string e = errorOf(R"({"optimizer": {"type": "Adam", "params": {"weight_decay": 0.01, "adam_w_mode": false}}})",
                          compileCtx());
  EXPECT_NE(e.find("ds.json: optimizer.type: \"Adam\" with \"adam_w_mode\": false adds weight_decay 0.01 to the "
                   "gradient (L2"),
            std::string::npos)
      << e;
  EXPECT_FALSE(errorOf(R"({"optimizer": {"type": "Adam", "params": {"weight_decay": 0.01, "adam_w_mode": false}}})",
                       launchCtx())
                   .empty()); // launch refuses the same math too
  f = flagsOf(resolved(R"({"optimizer": {"type": "Adam", "params": {"weight_decay": 0, "adam_w_mode": false}}})",
                       compileCtx()));
  EXPECT_EQ(f["weight-decay"], "0");
  f = flagsOf(resolved(R"({"optimizer": {"type": "AdamW", "params": {"weight_decay": 0.5, "adam_w_mode": false}}})",
                       compileCtx()));
  EXPECT_EQ(f["weight-decay"], "0.5");
  EXPECT_EQ(errorOf(R"({"optimizer": {"type": "Lamb"}})", launchCtx()),
            "ds.json: optimizer.type: \"Lamb\" is not implemented (Partita's optimizer is AdamW: give \"AdamW\" or "
            "\"Adam\")");
}

TEST(DsConfig, MixedPrecisionMapsToTheCompileAndLaunchFlags) {
  // compile: the enabled half type is --precision.
  auto f = flagsOf(resolved(R"({"fp16": {"enabled": true, "loss_scale": 0}})", compileCtx()));
  EXPECT_EQ(f["precision"], "fp16");
  f = flagsOf(resolved(R"({"bf16": {"enabled": true}})", compileCtx()));
  EXPECT_EQ(f["precision"], "bf16");
  EXPECT_EQ(flagsOf(resolved(R"({"fp16": {"enabled": false, "loss_scale": 0}})", compileCtx())).count("precision"), 0u);
  // launch: fp16's loss scaling keys are the loss-scale flags.
  f = flagsOf(resolved(R"({"fp16": {"enabled": true, "loss_scale": 0, "initial_scale_power": 12,
      "loss_scale_window": 500, "hysteresis": 3, "min_loss_scale": 0.5}})", launchCtx()));
  EXPECT_EQ(f["loss-scale"], "0");
  EXPECT_EQ(f["initial-scale-power"], "12");
  EXPECT_EQ(f["loss-scale-window"], "500");
  EXPECT_EQ(f["hysteresis"], "3");
  EXPECT_EQ(f["min-loss-scale"], "0.5");
  EXPECT_EQ(resolved(R"({"fp16": {"enabled": true}})", launchCtx()).precision, "fp16");
  // Errors name the key.
  for (const DsContext &ctx : {compileCtx(), launchCtx()})
    EXPECT_EQ(errorOf(R"({"fp16": {"enabled": true}, "bf16": {"enabled": true}})", ctx),
              "ds.json: bf16.enabled: fp16.enabled enables another half type: enable one");
  EXPECT_EQ(errorOf(R"({"fp16": {"enabled": true, "hysteresis": 0}})", launchCtx()),
            "ds.json: fp16.hysteresis: expected an integer >= 1, got 0");
}

TEST(DsConfig, EachCommandWarnsForItsOwnKeysOnce) {
  std::string json = R"({"wall_clock_breakdown": false, "steps_per_print": 10,
      "zero_optimization": {"stage": 0, "contiguous_gradients": true, "overlap_comm": false,
                            "offload_optimizer": {"device": "cpu"}, "stage3_max_live_parameters": 1e9},
      "gradient_clipping": 1.0})";
  DsMapping c = resolved(json, compileCtx());
  std::vector<std::string> compileWarnings{
      "ds-config key 'zero_optimization.contiguous_gradients' is not implemented; ignored",
      "ds-config key 'zero_optimization.stage3_max_live_parameters' is not implemented; ignored",
      "ds-config key 'wall_clock_breakdown' is not implemented; ignored"};
  EXPECT_EQ(c.warnings, compileWarnings);
  EXPECT_EQ(flagsOf(c).count("no-overlap"), 0u);
  DsMapping l = resolved(json, launchCtx());
  std::vector<std::string> launchWarnings{
      "ds-config key 'steps_per_print' is not implemented; ignored (launch prints every step)"};
  EXPECT_EQ(l.warnings, launchWarnings);
  auto f = flagsOf(l);
  EXPECT_EQ(f["no-overlap"], "true");
  EXPECT_EQ(f["clip-grad-norm"], "1");
  EXPECT_EQ(f["offload-optimizer"], "true"); // the launch's: compile says nothing of it
  EXPECT_EQ(f.count("zero"), 0u);
}

// offload_optimizer: "cpu" is --offload-optimizer, "none" nothing, "nvme" an
// error naming the key; its other keys but pin_memory are warned about.
TEST(DsConfig, OffloadOptimizerToTheCpuIsALaunchFlag) {
  EXPECT_EQ(flagsOf(resolved(R"({"zero_optimization": {"offload_optimizer": {"device": "none"}}})", launchCtx()))
                .count("offload-optimizer"),
            0u);
  DsMapping m = resolved(
      R"({"zero_optimization": {"offload_optimizer": {"device": "cpu", "pin_memory": true, "buffer_count": 4}}})",
      launchCtx());
  EXPECT_EQ(flagsOf(m)["offload-optimizer"], "true");
  std::vector<std::string> warnings{
      "ds-config key 'zero_optimization.offload_optimizer.buffer_count' is not implemented; ignored"};
  EXPECT_EQ(m.warnings, warnings);
  EXPECT_EQ(errorOf(R"({"zero_optimization": {"offload_optimizer": {"device": "nvme"}}})", launchCtx()),
            "ds.json: zero_optimization.offload_optimizer.device: \"nvme\" is not implemented (Partita offloads "
            "the optimizer to \"cpu\")");
}

TEST(DsConfig, WarmupLRIsWarmupThenConstantAtWarmupMaxLr) {
  DsMapping m = resolved(R"({"optimizer": {"type": "AdamW", "params": {"lr": 0.5}},
      "scheduler": {"type": "WarmupLR", "params": {"warmup_min_lr": 0, "warmup_max_lr": 0.002,
                                                   "warmup_num_steps": 5, "warmup_type": "linear"}}})",
                         launchCtx());
  auto f = flagsOf(m);
  EXPECT_EQ(f["lr"], "0.002"); // WarmupLR replaces the optimizer's rate
  EXPECT_EQ(f["lr-schedule"], "constant");
  EXPECT_EQ(f["warmup-steps"], "5");
  EXPECT_EQ(f.count("steps"), 0u);
  ASSERT_EQ(m.warnings.size(), 1u);
  EXPECT_NE(m.warnings[0].find("the learning rates of the first 6 steps differ"), std::string::npos) << m.warnings[0];
}

TEST(DsConfig, WarmupDecayLRIsLinearToWarmupMinLr) {
  auto f = flagsOf(resolved(R"({"scheduler": {"type": "WarmupDecayLR", "params": {"warmup_min_lr": 0.0001,
      "warmup_max_lr": 0.001, "warmup_num_steps": 0, "total_num_steps": 40}}})",
                            launchCtx()));
  EXPECT_EQ(f["lr"], "0.001");
  EXPECT_EQ(f["lr-schedule"], "linear");
  EXPECT_EQ(f["min-lr-ratio"], "0.10000000000000001");
  EXPECT_EQ(f["warmup-steps"], "0");
  EXPECT_EQ(f["steps"], "40");
}

TEST(DsConfig, WarmupCosineLRIsCosineToCosMinRatio) {
  auto f = flagsOf(resolved(R"({"optimizer": {"type": "AdamW", "params": {"lr": 0.01}},
      "scheduler": {"type": "WarmupCosineLR", "params": {"total_num_steps": 30, "warmup_num_steps": 3,
                                                         "warmup_type": "linear"}}})",
                            launchCtx()));
  EXPECT_EQ(f["lr"], "0.01"); // WarmupCosineLR scales the optimizer's rate
  EXPECT_EQ(f["lr-schedule"], "cosine");
  EXPECT_EQ(f["min-lr-ratio"], "0.0001"); // DeepSpeed's default cos_min_ratio
  EXPECT_EQ(f["warmup-steps"], "3");
  EXPECT_EQ(f["steps"], "30");
}

TEST(DsConfig, SchedulesPartitaCannotRunAreErrors) {
  // DeepSpeed's default warmup is logarithmic.
  EXPECT_EQ(errorOf(R"({"scheduler": {"type": "WarmupLR", "params": {"warmup_num_steps": 10}}})", launchCtx()),
            "ds.json: scheduler.params.warmup_type: \"log\" (DeepSpeed's default) warms up logarithmically, Partita "
            "linearly: give \"warmup_type\": \"linear\" (or warmup_num_steps 0)");
  EXPECT_NE(errorOf(R"({"scheduler": {"type": "WarmupLR", "params": {"warmup_min_lr": 1e-5, "warmup_type": "linear"}}})",
                    launchCtx())
                .find("scheduler.params.warmup_min_lr: Partita's warmup starts from 0"),
            std::string::npos);
  EXPECT_EQ(errorOf(R"({"scheduler": {"type": "OneCycle"}})", launchCtx()),
            "ds.json: scheduler.type: \"OneCycle\" is not implemented (Partita's schedules: WarmupLR, WarmupDecayLR, "
            "WarmupCosineLR)");
  EXPECT_EQ(errorOf(R"({"scheduler": {"type": "WarmupLR", "params": {"cos_min_ratio": 0.1, "warmup_num_steps": 0}}})",
                    launchCtx()),
            "ds.json: scheduler.params.cos_min_ratio: not a parameter of WarmupLR");
  EXPECT_NE(errorOf(R"({"scheduler": {"type": "WarmupDecayLR", "params": {"warmup_num_steps": 0}}})", launchCtx())
                .find("scheduler.params.total_num_steps: missing"),
            std::string::npos);
  DsContext ctx = launchCtx();
  ctx.steps = 20;
  EXPECT_EQ(errorOf(R"({"scheduler": {"type": "WarmupCosineLR", "params": {"total_num_steps": 30,
                       "warmup_num_steps": 0}}})",
                    ctx),
            "ds.json: scheduler.params.total_num_steps 30 is not --steps 20: Partita's schedule decays over the run "
            "(give --steps 30, or leave --steps out)");
}

TEST(DsConfig, CompileIgnoresLaunchKeysAndLaunchIgnoresCompileKeys) {
  std::string json = R"({"scheduler": {"type": "WarmupLR", "params": {"warmup_num_steps": 0}},
                         "zero_optimization": {"contiguous_gradients": true, "allgather_bucket_size": 5e8}})";
  DsMapping c = resolved(json, compileCtx());
  ASSERT_EQ(c.warnings.size(), 1u);
  EXPECT_EQ(c.warnings[0], "ds-config key 'zero_optimization.contiguous_gradients' is not implemented; ignored");
  EXPECT_FALSE(flagsOf(c).count("lr-schedule"));
  // DeepSpeed's default all-gather bucket, 5e8 elements of 4 bytes: 2000 MB.
  EXPECT_EQ(flagsOf(c)["allgather-bucket-mb"], "2000");
  DsMapping l = resolved(json, launchCtx());
  for (const std::string &w : l.warnings)
    EXPECT_EQ(w.find("contiguous"), std::string::npos) << w;
}

// The settings land on the flags of a subcommand unless the command line gave them.
static llvm::cl::SubCommand testCmd("ds-config-test", "");
static llvm::cl::opt<double> testLr("lr", llvm::cl::init(1e-3), llvm::cl::sub(testCmd));
static llvm::cl::opt<int> testBatch("batch", llvm::cl::init(0), llvm::cl::sub(testCmd));

TEST(DsConfig, CommandLineFlagsOverrideTheFile) {
  DsMapping m;
  m.file = "ds.json";
  m.settings = {{"lr", "0.25", "optimizer.params.lr"}, {"batch", "4", "train_micro_batch_size_per_gpu"}};
  testBatch.addOccurrence(0, "batch", "2"); // as if typed
  ASSERT_FALSE(applyDsSettings(m, testCmd));
  EXPECT_EQ(testLr.getValue(), 0.25);
  EXPECT_EQ(testBatch.getValue(), 2);
  m.settings = {{"seq", "4", "x"}};
  auto err = applyDsSettings(m, testCmd);
  ASSERT_TRUE(static_cast<bool>(err));
  EXPECT_EQ(llvm::toString(std::move(err)), "ds.json: x: this command has no flag --seq");
}
