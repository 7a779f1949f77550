//===- DsConfig.cpp - reading a DeepSpeed config, applying it as flags ----===//
//
// The typed reads, DeepSpeed's batch rule, and the commands' entry points;
// what each key maps to is in DsConfigSections.cpp.
//===----------------------------------------------------------------------===//
#include "tools/DsConfig.h"
#include "compiler/plan/Plan.h"
#include "runtime/train/TrainOptions.h"
#include "tools/DsConfigReader.h"
#include "tools/ToolCommon.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"
#include <algorithm>
#include <cmath>
#include <cstdio>

namespace partita {
namespace ds {

void Reader::notImplemented(const std::string &key, const std::string &why) {
  warn(key, "ds-config key '" + key + "' is not implemented; ignored" + (why.empty() ? "" : " (" + why + ")"));
}

void Reader::warn(const std::string &key, const std::string &message) {
  if (warned.insert(key).second)
    out.warnings.push_back(message);
}

std::vector<std::string> Section::keys() const {
  std::vector<std::string> out;
  if (object_)
    for (const auto &kv : *object_)
      out.push_back(kv.first.str());
  std::sort(out.begin(), out.end());
  return out;
}

void Section::notImplementedExcept(const std::set<std::string> &used) const {
  for (const std::string &key : keys())
    if (!used.count(key))
      r_.notImplemented(path(key));
}

/// A JSON value as the file would write it (llvm::json prints 0.9 as 0.90000000000000002).
static std::string describe(const llvm::json::Value &v) {
  if (const llvm::json::Array *a = v.getAsArray()) {
    std::string out = "[";
    for (const llvm::json::Value &e : *a)
      out += (out.size() > 1 ? ", " : "") + describe(e);
    return out + "]";
  }
  if (v.kind() == llvm::json::Value::Number && !v.getAsInteger()) {
    char text[40];
    std::snprintf(text, sizeof text, "%.15g", *v.getAsNumber());
    return text;
  }
  return llvm::formatv("{0}", v).str();
}

void Section::typeError(llvm::StringRef key, llvm::StringRef what, const llvm::json::Value &got) const {
  std::string text = describe(got);
  bool autoValue = got.getAsString() && *got.getAsString() == "auto";
  r_.fail(path(key) + ": expected " + what.str() + ", got " + text +
          (autoValue ? " (\"auto\" is filled in by the Hugging Face Trainer; give the value)" : ""));
}

std::optional<int64_t> Section::integer(llvm::StringRef key, int64_t lo, int64_t hi, llvm::StringRef what) const {
  const llvm::json::Value *v = object_ ? object_->get(key) : nullptr;
  if (!v)
    return std::nullopt;
  auto i = v->getAsInteger(); // 5e8 is an integer too
  if (!i || *i < lo || *i > hi) {
    typeError(key, what, *v);
    return std::nullopt;
  }
  return *i;
}

std::optional<double> Section::number(llvm::StringRef key, double lo, double hi, bool loOpen,
                                      llvm::StringRef what) const {
  const llvm::json::Value *v = object_ ? object_->get(key) : nullptr;
  if (!v)
    return std::nullopt;
  auto d = v->getAsNumber();
  if (!d || !std::isfinite(*d) || *d < lo || (loOpen && *d == lo) || *d > hi) {
    typeError(key, what, *v);
    return std::nullopt;
  }
  return *d;
}

std::optional<bool> Section::boolean(llvm::StringRef key) const {
  const llvm::json::Value *v = object_ ? object_->get(key) : nullptr;
  if (!v)
    return std::nullopt;
  auto b = v->getAsBoolean();
  if (!b) {
    typeError(key, "true or false", *v);
    return std::nullopt;
  }
  return *b;
}

std::optional<std::string> Section::choice(llvm::StringRef key, llvm::ArrayRef<llvm::StringRef> allowed,
                                           bool anyCase) const {
  const llvm::json::Value *v = object_ ? object_->get(key) : nullptr;
  if (!v)
    return std::nullopt;
  auto s = v->getAsString();
  if (s)
    for (llvm::StringRef a : allowed)
      if (anyCase ? s->equals_insensitive(a) : *s == a)
        return s->str();
  std::string what = "one of";
  for (llvm::StringRef a : allowed)
    what += " \"" + a.str() + "\"";
  typeError(key, what, *v);
  return std::nullopt;
}

std::optional<std::vector<double>> Section::numbers(llvm::StringRef key, size_t count, llvm::StringRef what) const {
  const llvm::json::Value *v = object_ ? object_->get(key) : nullptr;
  if (!v)
    return std::nullopt;
  const llvm::json::Array *a = v->getAsArray();
  std::vector<double> out;
  for (size_t i = 0; a && a->size() == count && i < count; ++i)
    if (auto d = (*a)[i].getAsNumber())
      out.push_back(*d);
  if (out.size() != count) {
    typeError(key, what, *v);
    return std::nullopt;
  }
  return out;
}

Section Section::object(llvm::StringRef key) const {
  const llvm::json::Value *v = object_ ? object_->get(key) : nullptr;
  if (v && !v->getAsObject())
    typeError(key, "an object", *v);
  return Section(r_, v ? v->getAsObject() : nullptr, path(key));
}

std::string flagNumber(double v) {
  char text[40];
  std::snprintf(text, sizeof text, "%.17g", v);
  return text;
}

} // namespace ds

llvm::Expected<DsBatch> solveBatchRule(const DsBatch &given, int64_t dp, llvm::StringRef microLabel,
                                       llvm::StringRef accumulationLabel) {
  DsBatch b = given;
  std::string tbs = "train_batch_size " + std::to_string(b.train.value_or(0));
  std::string micro = microLabel.str() + " " + std::to_string(b.micro.value_or(0));
  std::string acc = accumulationLabel.str() + " " + std::to_string(b.accumulation.value_or(0));
  std::string dps = "dp " + std::to_string(dp);
  // train = factor × (what is derived), with an error unless it divides.
  auto divide = [&](int64_t factor, const std::string &factorText, std::optional<int64_t> &result) -> llvm::Error {
    if (*b.train % factor != 0)
      return fail(tbs + " is not a multiple of " + factorText + " = " + std::to_string(factor) +
                  " (DeepSpeed's rule: train_batch_size = train_micro_batch_size_per_gpu x "
                  "gradient_accumulation_steps x dp)");
    result = *b.train / factor;
    return llvm::Error::success();
  };
  if (b.train && b.micro && b.accumulation) {
    int64_t product = *b.micro * *b.accumulation * dp;
    if (product != *b.train)
      return fail(tbs + " is not " + micro + " x " + acc + " x " + dps + " = " + std::to_string(product) +
                  " (DeepSpeed's rule: give two of the three, or three that agree)");
  } else if (b.train && b.micro) {
    if (auto err = divide(*b.micro * dp, micro + " x " + dps, b.accumulation))
      return std::move(err);
  } else if (b.train && b.accumulation) {
    if (auto err = divide(*b.accumulation * dp, acc + " x " + dps, b.micro))
      return std::move(err);
  } else if (b.micro && b.accumulation) {
    b.train = *b.micro * *b.accumulation * dp;
  } else if (b.train) { // DeepSpeed: no accumulation
    b.accumulation = 1;
    if (auto err = divide(dp, dps, b.micro))
      return std::move(err);
  } else if (b.micro) {
    b.accumulation = 1;
    b.train = *b.micro * dp;
  }
  return b;
}

llvm::Expected<DsMapping> resolveDsConfig(llvm::StringRef text, llvm::StringRef file, const DsContext &ctx) {
  llvm::Expected<llvm::json::Value> parsed = llvm::json::parse(text);
  if (!parsed) // llvm::json says where: "[3:12, byte=40]: Expected , or }"
    return fail(file + ": invalid JSON: " + llvm::toString(parsed.takeError()));
  const llvm::json::Object *root = parsed->getAsObject();
  if (!root)
    return fail(file + ": expected a JSON object (a DeepSpeed config), got " + llvm::formatv("{0}", *parsed).str());
  DsMapping m;
  m.file = file.str();
  ds::Reader r{"", m, {}};
  ds::Section top(r, root, "");
  ds::mapBatch(top, ctx);
  ds::mapPrecision(top, ctx);
  ds::mapOptimizer(top, ctx);
  ds::mapZero(top, ctx);
  if (ctx.tool == DsTool::Launch) {
    ds::mapScheduler(top, ctx);
    ds::mapLaunchScalars(top);
  } else { // compile speaks for the keys neither command reads
    static const std::set<std::string> known{"train_batch_size", "train_micro_batch_size_per_gpu",
                                             "gradient_accumulation_steps", "zero_optimization", "fp16", "bf16",
                                             "bfloat16", "optimizer", "scheduler", "gradient_clipping",
                                             "steps_per_print"};
    top.notImplementedExcept(known);
  }
  if (!r.error.empty())
    return fail(file + ": " + r.error);
  return m;
}

llvm::Error applyDsSettings(const DsMapping &m, llvm::cl::SubCommand &sub) {
  llvm::StringMap<llvm::cl::Option *> &options = llvm::cl::getRegisteredOptions(sub);
  for (const DsSetting &s : m.settings) {
    auto it = options.find(s.flag);
    if (it == options.end())
      return fail(m.file + ": " + s.key + ": this command has no flag --" + s.flag);
    llvm::cl::Option *o = it->second;
    if (o->getNumOccurrences()) // the command line overrides the file
      continue;
    if (o->addOccurrence(0, s.flag, s.value))
      return fail(m.file + ": " + s.key + ": cannot set --" + s.flag + " " + s.value);
  }
  return llvm::Error::success();
}

static llvm::Expected<DsMapping> readDsConfig(llvm::StringRef file, const DsContext &ctx) {
  auto buf = llvm::MemoryBuffer::getFile(file);
  if (!buf)
    return fail(file + ": cannot read the --ds-config file: " + buf.getError().message());
  return resolveDsConfig((*buf)->getBuffer(), file, ctx);
}

static void printWarnings(const DsMapping &m) {
  for (const std::string &w : m.warnings)
    llvm::errs() << "partita: warning: " << w << "\n";
}

llvm::Expected<DsMapping> useDsConfigForCompile(llvm::StringRef file, llvm::cl::SubCommand &sub, int64_t dp) {
  if (file.empty())
    return DsMapping();
  DsContext ctx;
  ctx.tool = DsTool::Compile;
  ctx.dp = dp;
  auto m = readDsConfig(file, ctx);
  if (!m)
    return m.takeError();
  printWarnings(*m);
  if (auto err = applyDsSettings(*m, sub))
    return std::move(err);
  return m;
}

llvm::Error checkDsCompiledBatch(const DsMapping &m, llvm::StringRef dir) {
  if (!m.microBatch)
    return llvm::Error::success();
  auto plan = readPlan(inDir(dir, "plan.json"));
  if (!plan)
    return plan.takeError();
  if (plan->inputs.empty() || plan->inputs.front().type.shape.empty())
    return llvm::Error::success();
  const TensorSpec &first = plan->inputs.front();
  int64_t batch = first.type.shape.front();
  if (batch == *m.microBatch)
    return llvm::Error::success();
  std::string shape;
  for (int64_t d : first.type.shape)
    shape += (shape.empty() ? "" : "x") + std::to_string(d);
  return fail(m.file + ": a micro-batch of " + m.microBatchFrom + " per replica is not the model's batch " +
              std::to_string(batch) + " (its first input '" + first.name + "' is " + shape +
              "): export it with that batch, or fix a dynamic batch with --input-shape " + first.name + "=...");
}

/// The keys compile reads (the ZeRO stage, AdamW's constants) are compiled
/// into the plan: where the config asks for other values (a compile flag
/// overrode the file, or the file changed since), the launch says so, naming
/// the key and both values, and runs the plan's.
static void warnCompiledSettings(llvm::StringRef file, const Plan &plan, int64_t dp) {
  DsContext compile;
  compile.tool = DsTool::Compile;
  compile.dp = dp;
  auto m = readDsConfig(file, compile);
  if (!m) { // launch's own reading of the file reports its errors; this one adds none
    llvm::consumeError(m.takeError());
    return;
  }
  auto compiled = [&](llvm::StringRef flag) -> std::optional<double> {
    if (flag == "zero")
      return dp > 1 ? std::optional<double>(static_cast<double>(plan.zero)) : std::nullopt; // dp 1: no ZeRO
    if (flag == "adam-beta1")
      return plan.optimizer.beta1;
    if (flag == "adam-beta2")
      return plan.optimizer.beta2;
    if (flag == "adam-eps")
      return plan.optimizer.eps;
    if (flag == "weight-decay")
      return plan.optimizer.weightDecay;
    return std::nullopt;
  };
  for (const DsSetting &s : m->settings) {
    std::optional<double> have = compiled(s.flag);
    double asked = 0;
    if (!have || llvm::StringRef(s.value).getAsDouble(asked))
      continue;
    if (std::abs(asked - *have) > 1e-12 * std::max(1.0, std::abs(*have)))
      llvm::errs() << "partita: warning: " << file << ": " << s.key << " asks for " << llvm::format("%g", asked) << " (compile --"
                   << s.flag << "), but the plan was compiled with " << llvm::format("%g", *have)
                   << ": the plan's value is used (compile with this config to change it)\n";
  }
}

llvm::Error useDsConfigForLaunch(llvm::StringRef file, llvm::cl::SubCommand &sub, const Plan &plan,
                                 const rt::TrainOptions &train, bool report) {
  if (file.empty())
    return llvm::Error::success();
  if (plan.schedule != "gradient-accumulation")
    return fail("--ds-config " + file + ": needs a plan compiled with --train (a DeepSpeed config describes training)");
  llvm::StringMap<llvm::cl::Option *> &options = llvm::cl::getRegisteredOptions(sub);
  auto given = [&](llvm::StringRef flag, int value) -> std::optional<int64_t> {
    auto it = options.find(flag);
    if (it == options.end() || !it->second->getNumOccurrences())
      return std::nullopt;
    return value;
  };
  DsContext ctx;
  ctx.tool = DsTool::Launch;
  const MeshAxis *dpAxis = plan.mesh.find(mesh_axis::kData);
  ctx.dp = dpAxis ? dpAxis->size : 1;
  ctx.batch = given("batch", train.batch);
  ctx.microBatches = given("micro-batches", train.microBatches);
  ctx.steps = given("steps", train.steps);
  auto m = readDsConfig(file, ctx);
  if (!m)
    return m.takeError();
  if (m->precision != plan.precision) { // the layout is the compiled program's
    std::string asks = m->precisionFrom.empty() ? "no fp16 or bf16 section is enabled (fp32)"
                                                : m->precisionFrom + " asks for " + m->precision;
    return fail(file + ": " + asks + ", but the plan was compiled with --precision " + plan.precision +
                ": compile it with this config (or --precision " + m->precision + ")");
  }
  if (report) {
    printWarnings(*m);
    warnCompiledSettings(file, plan, ctx.dp);
  }
  return applyDsSettings(*m, sub);
}

} // namespace partita
