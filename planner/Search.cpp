//===- Search.cpp ---------------------------------------------------------===//
#include "planner/Search.h"
#include "compiler/onnx/OnnxExport.h"
#include "compiler/onnx/OnnxImport.h"
#include "llvm/Support/Path.h"
#include "passes/LayerNames.h"
#include "passes/LayerStructure.h"
#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <set>

namespace partita::planner {

namespace {
double now() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

/// What the search needs to know of the model before compiling it.
struct ModelFacts {
  int64_t batch = 1;          // the compiled micro-batch size (token ids' first dimension)
  double parameters = 0;      // elements of its float initializers
  int64_t layers = 0;         // layers by name (LayerNames.h), else by structure (LayerStructure.h)
  int64_t sequence = 1;       // tokens per sequence (the token ids' second dimension)
  std::vector<std::pair<std::string, Shape>> batchInputs; // inputs whose first dimension is the batch
  std::string copy; // the model with its inline weights moved to external data, or ""
};

llvm::Expected<ModelFacts> modelFacts(const ProfileContext &ctx) {
  ImportOptions opts;
  for (const std::string &s : ctx.inputShapes)
    if (auto err = parseInputShape(s, opts))
      return err;
  auto g = importOnnx(ctx.model, opts);
  if (!g)
    return g.takeError();
  ModelFacts f;
  for (const Value *in : (*g)->inputs())
    if (!isFloat(in->type().dtype) && in->type().shape.size() >= 2) {
      f.batch = in->type().shape[0];
      f.sequence = in->type().shape[1];
      break;
    }
  for (const Value *in : (*g)->inputs())
    if (!in->type().shape.empty() && in->type().shape[0] == f.batch)
      f.batchInputs.push_back({in->name(), in->type().shape});
  std::set<std::string> layers;
  std::vector<const Node *> forward;
  for (const Node *n : (*g)->nodes()) {
    if (n->is("Weight") && isFloat(n->output()->type().dtype))
      f.parameters += static_cast<double>(n->output()->type().numel());
    if (!n->is("Weight") && !n->is("Constant"))
      forward.push_back(n);
    std::string key = layerKey(n->name());
    if (!key.empty())
      layers.insert(key);
  }
  // Layers by their names, else as the dataflow shows them (as recompute finds them).
  f.layers = static_cast<int64_t>(layers.empty() ? layersByStructure(forward).size() : layers.size());
  // Weights inside the .onnx: each compile would parse them and write every
  // rank's shards. One copy with external data instead, which the layouts'
  // compiles then read by reference (typed, never loaded).
  double inlineBytes = 0;
  for (const Node *n : (*g)->nodes())
    if (n->is("Weight"))
      if (const WeightRef *ref = (*g)->weights.find(n->stringAttr("name", "")); ref && ref->inlineBytes)
        inlineBytes += static_cast<double>(ref->inlineBytes->size());
  if (inlineBytes > (1 << 20)) {
    llvm::SmallString<256> copy(ctx.scratch);
    llvm::sys::path::append(copy, "model.onnx");
    ExportOptions eo;
    eo.externalDataFile = "model.weights.bin";
    if (auto err = exportOnnx(**g, copy, eo))
      return err;
    f.copy = std::string(copy);
  }
  return f;
}

std::vector<int> divisors(int n) {
  std::vector<int> out;
  for (int k = 1; k <= n; ++k)
    if (n % k == 0)
      out.push_back(k);
  return out;
}

/// A rough step time for ordering classes (not a prediction; Megatron's
/// back-of-the-envelope): every device does 6 P T / N FLOP (a third more
/// under full recompute) at the matmul rate; the pipeline idles (pp - 1)/(v m)
/// of it; tp all-reduces a micro-batch's activation (hidden size from P =
/// 12 L h^2) four times a layer (six with full recompute); dp all-reduces the
/// stage's gradients once a step, half of it hidden by the backward.
double roughSeconds(const Layout &l, const ModelFacts &f, const Machine &machine, int devices, int64_t globalBatch) {
  const double rc = l.recompute == "full" ? 4.0 / 3 : l.recompute == "selective" ? 1.05 : 1;
  const DType dtype = l.precision == "fp32" ? DType::F32 : DType::BF16;
  const double bytes = l.precision == "fp32" ? 4 : 2;
  const double tokens = static_cast<double>(globalBatch) * static_cast<double>(f.sequence);
  const double compute = 6 * f.parameters * tokens * rc / (devices * machine.matmulRate(dtype));
  const double bubble = l.pp > 1 ? compute * (l.pp - 1) / (l.virtualStages * static_cast<double>(l.microBatches)) : 0;
  const int dp = devices / (l.tp * l.pp);
  Layout sized = l;
  sized.dp = dp;
  AxisLinks links(layoutMesh(sized), machine);
  const double layers = std::max<double>(1, static_cast<double>(f.layers));
  const double hidden = std::sqrt(f.parameters / (12 * layers));
  const double activation = static_cast<double>(l.microBatchSize * f.sequence) * hidden * bytes;
  double tensor = 0;
  if (l.tp > 1)
    tensor = (l.recompute == "full" ? 6 : 4) * layers / l.pp * static_cast<double>(l.microBatches) *
             links.link("tp").time(2.0 * (l.tp - 1) / l.tp * activation, 2.0 * (l.tp - 1));
  double data = 0;
  if (dp > 1)
    data = 0.5 * links.link("dp").time(2.0 * (dp - 1) / dp * f.parameters * bytes / (l.tp * l.pp), 2.0 * (dp - 1));
  return compute + bubble + tensor + data;
}

/// A floor under a class's activations on its first stage (Korthikanti et
/// al. 2022, "Reducing Activation Recomputation in Large Transformer
/// Models", table 2: per layer and micro-batch, in bytes, with sequence
/// parallelism s b h (34 + 5 a s / h) / t without recompute, 34 s b h / t
/// selective, 2 s b h / t (the layer's input) full; without it
/// s b h (10 + 24 / t + 5 a s / (h t)), s b h (10 + 24 / t) and 2 s b h), the
/// heads a taken as h / 128; 1F1B keeps min(pp, m) micro-batches.
double activationFloor(const Layout &l, const ModelFacts &f) {
  const double layers = std::max<double>(1, static_cast<double>(f.layers));
  const double h = std::sqrt(f.parameters / (12 * layers)), s = static_cast<double>(f.sequence);
  const double sbh = s * static_cast<double>(l.microBatchSize) * h, t = l.tp, attention = 5 * (h / 128) * s / h;
  const double perLayer = l.sequenceParallel
                              ? (l.recompute == "full"        ? 2 * sbh / t
                                 : l.recompute == "selective" ? 34 * sbh / t
                                                              : sbh * (34 + attention) / t)
                              : (l.recompute == "full"        ? 2 * sbh
                                 : l.recompute == "selective" ? sbh * (10 + 24 / t)
                                                              : sbh * (10 + (24 + attention) / t));
  const double inFlight = static_cast<double>(std::min<int64_t>(l.pp, l.microBatches));
  return layers / l.pp * inFlight * perLayer;
}

/// A floor under a class's model states: every one of them (16 bytes a
/// parameter under mixed precision, 16 in fp32 too: weights, gradients and
/// two moments) partitioned over all of tp x pp x dp, as ZeRO-3 would.
double statesFloor(const Layout &l, const ModelFacts &f, int devices) {
  (void)l;
  return 16 * f.parameters / devices;
}

bool faster(const Prediction &a, const Prediction &b) { return a.stepSeconds < b.stepSeconds; }
} // namespace

static llvm::Expected<SearchResult> search(const ProfileContext &ctx, const SearchOptions &o, const ModelFacts &facts0,
                                           double start);

llvm::Expected<SearchResult> searchLayouts(const ProfileContext &ctx, const SearchOptions &o) {
  const double start = now();
  auto facts = modelFacts(ctx);
  if (!facts)
    return facts.takeError();
  ProfileContext local = ctx;
  if (!facts->copy.empty())
    local.model = facts->copy;
  local.batchInputs = facts->batchInputs;
  local.modelBatch = facts->batch;
  auto result = search(local, o, *facts, start);
  if (result) {
    result->context = local;
    result->context.model = ctx.model; // the user's, not the scratch copy
  }
  return result;
}

static llvm::Expected<SearchResult> search(const ProfileContext &ctx, const SearchOptions &o, const ModelFacts &facts0,
                                           double start) {
  const ModelFacts *facts = &facts0;
  const Machine &machine = *ctx.machine;
  SearchResult result;
  auto say = [&](const std::string &line) {
    if (o.progress)
      o.progress(line);
  };
  std::vector<int64_t> sizes = o.microBatchSizes.empty() ? std::vector<int64_t>{facts->batch} : o.microBatchSizes;
  result.globalBatch = o.globalBatch > 0 ? o.globalBatch : facts->batch * o.devices;
  const int maxTp = o.maxTp > 0 ? o.maxTp : machine.devicesPerNode;

  // 1. The classes, each with the dp the devices leave and its micro-batches.
  std::vector<Layout> classes;
  auto allowed = [](const std::vector<int> &only, int v) { return only.empty() || llvm::is_contained(only, v); };
  for (int tp : divisors(o.devices)) {
    if (tp > maxTp || !allowed(o.tps, tp))
      continue;
    for (int pp : divisors(o.devices / tp)) {
      if (!allowed(o.pps, pp))
        continue;
      const int dp = o.devices / (tp * pp);
      for (int64_t mbs : sizes) {
        if (result.globalBatch % (static_cast<int64_t>(dp) * mbs) != 0) {
          ++result.skippedForBatch;
          continue;
        }
        const int64_t m = result.globalBatch / (dp * mbs);
        for (int v = 1; v <= (pp > 1 ? o.maxVirtualStages : 1); ++v) {
          if (!allowed(o.virtualStages, v))
            continue;
          if (v > 1 && (m % pp != 0 || (facts->layers > 0 && facts->layers % (pp * v) != 0)))
            continue; // interleaving needs micro-batches in multiples of pp, equal layers per chunk
          for (const std::string &precision : o.precisions)
            for (const std::string &recompute : o.recomputes)
              for (bool sp : o.sequenceParallel) {
                // Sequence parallelism saves memory at the same traffic: its
                // class is compiled when its twin's layouts do not fit (below),
                // or from the start when it is the only one allowed.
                if (sp && (tp == 1 || llvm::is_contained(o.sequenceParallel, false)))
                  continue;
                Layout l;
                l.tp = tp, l.pp = pp, l.dp = 1, l.virtualStages = v, l.microBatches = m, l.microBatchSize = mbs;
                l.precision = precision, l.recompute = recompute, l.sequenceParallel = sp;
                l.schedule = v > 1 ? "interleaved" : "1f1b";
                // Weights alone, partitioned by tp and pp only (ZeRO-3 could
                // split them further, but every stage gathers a layer whole).
                // (With ZeRO-3 over dp > 1 they are partitioned over every device.)
                const bool zero3 = dp > 1 && llvm::is_contained(o.zeroStages, 3);
                const double weightBytes =
                    facts->parameters * (precision == "fp32" ? 4 : 2) / (zero3 ? o.devices : tp * pp);
                ++result.classes;
                if (weightBytes > o.memoryCap) {
                  ++result.skippedForMemory;
                  continue;
                }
                classes.push_back(l);
              }
        }
      }
    }
  }
  std::stable_sort(classes.begin(), classes.end(), [&](const Layout &a, const Layout &b) {
    return roughSeconds(a, *facts, machine, o.devices, result.globalBatch) <
           roughSeconds(b, *facts, machine, o.devices, result.globalBatch);
  });

  // 2. Profile classes within the budget; predict their variants.
  std::vector<Prediction> all;
  std::map<std::string, const LayoutProfile *> profileOf; // layout string -> its class's profile
  std::vector<std::unique_ptr<LayoutProfile>> profiles;
  const double budgetEnd = now() + o.budgetSeconds;
  auto variants = [&](const Layout &cls, const LayoutProfile &profile) {
    const int dp = o.devices / (cls.tp * cls.pp);
    for (int zero : o.zeroStages) {
      if (dp == 1 && zero > 0) {
        ++result.zeroWithoutDp;
        continue;
      }
      std::vector<std::string> schedules = cls.pp == 1 ? std::vector<std::string>{"1f1b"}
                                           : cls.virtualStages > 1 ? std::vector<std::string>{"interleaved"}
                                                                   : o.schedules;
      for (const std::string &schedule : schedules) {
        Layout l = cls;
        l.dp = dp, l.zero = zero, l.schedule = schedule;
        all.push_back(predict(l, profile, ctx, o.memoryCap, result.globalBatch));
      }
    }
  };
  // The classes compiled so far teach how far a recompute mode's real
  // activations exceed the floor: a class whose floor, so scaled, and model
  // states cannot fit is not compiled.
  // The smallest ratio seen, so that the scaled floor stays under every class seen.
  std::map<std::string, double> activationRatio; // recompute mode, tp (+sp), precision -> smallest real / floor seen
  std::set<std::string> cutsTried;               // the stage-cut classes made below, each once
  for (size_t c = 0; c < classes.size(); ++c) {
    const Layout cls = classes[c]; // a copy: a stage-cut class may be inserted after it
    const std::string kind = cls.recompute + "/tp" + std::to_string(cls.tp) + (cls.sequenceParallel ? "+sp/" : "/") +
                             cls.precision;
    const double ratio = activationRatio.count(kind) ? activationRatio[kind] : 1.0;
    if (statesFloor(cls, *facts, o.devices) + ratio * activationFloor(cls, *facts) > o.memoryCap) {
      ++result.skippedForMemory;
      continue;
    }
    if (result.compiles >= 3 && now() > budgetEnd) {
      ++result.unexplored;
      continue;
    }
    const double t0 = now();
    auto profile = profileLayout(cls, ctx);
    ++result.compiles;
    if (!profile) {
      result.failed.push_back({cls, llvm::toString(profile.takeError())});
      continue;
    }
    ++result.profiled;
    say("compiled " + cls.str() + " in " + std::to_string(now() - t0).substr(0, 4) + " s");
    profiles.push_back(std::make_unique<LayoutProfile>(std::move(*profile)));
    double real = 0; // the fullest stage's activations
    for (const StageProfile &stage : profiles.back()->stages)
      real = std::max(real, static_cast<double>(stage.memory[static_cast<size_t>(rt::MemoryCategory::Activations)]));
    const double seen = std::max(1.0, real / activationFloor(cls, *facts));
    auto [it, added] = activationRatio.try_emplace(kind, seen);
    if (!added)
      it->second = std::min(it->second, seen);
    const size_t first = all.size();
    variants(cls, *profiles.back());
    // Classes that trade only memory, compiled next where none of this
    // class's layouts fits: with sequence parallelism (tp > 1; it moves the
    // same bytes), and with one layer moved from the fullest pipeline stage
    // to the emptiest (compile's own cut balances time, not memory: under
    // 1F1B the first stage keeps the most micro-batches in flight, the last
    // holds the head and the loss), and so on, each cut once.
    const bool fits = std::any_of(all.begin() + static_cast<std::ptrdiff_t>(first), all.end(),
                                  [](const Prediction &p) { return p.fits; });
    size_t next = c + 1;
    if (!fits && cls.tp > 1 && !cls.sequenceParallel && llvm::is_contained(o.sequenceParallel, true)) {
      Layout twin = cls;
      twin.sequenceParallel = true;
      classes.insert(classes.begin() + static_cast<std::ptrdiff_t>(next++), twin);
      ++result.classes;
    }
    const auto &stages = profiles.back()->stages;
    if (!fits && stages.size() > 1 && cls.virtualStages == 1 && facts->layers > cls.pp) {
      auto byPeak = [](const StageProfile &a, const StageProfile &b) { return a.peak < b.peak; };
      const size_t fullest = static_cast<size_t>(std::max_element(stages.begin(), stages.end(), byPeak) - stages.begin());
      const size_t emptiest = static_cast<size_t>(std::min_element(stages.begin(), stages.end(), byPeak) - stages.begin());
      std::vector<int> layers = cls.stageLayers;
      if (layers.empty()) { // from an even split: compile's cut is near it, and its counts are not reported here
        layers.assign(static_cast<size_t>(cls.pp), static_cast<int>(facts->layers / cls.pp));
        for (int64_t k = 0; k < facts->layers % cls.pp; ++k)
          ++layers[static_cast<size_t>(cls.pp - 1 - k)];
      }
      if (fullest != emptiest && layers[fullest] > 1) {
        --layers[fullest];
        ++layers[emptiest];
        Layout moved = cls;
        moved.stageLayers = layers;
        if (cutsTried.insert(moved.str()).second) {
          classes.insert(classes.begin() + static_cast<std::ptrdiff_t>(next), moved);
          ++result.classes;
        }
      }
    }
  }

  // 3. The best that fit, compiled as they are, until the top K are exact.
  std::set<std::string> exactDone;
  for (;;) { // each layout is compiled as it is once at most (exactDone): this ends
    std::stable_sort(all.begin(), all.end(), faster);
    std::vector<size_t> todo;
    size_t fitting = 0;
    for (size_t i = 0; i < all.size() && fitting < static_cast<size_t>(o.top); ++i) {
      if (!all[i].fits)
        continue;
      ++fitting;
      if (!all[i].memoryExact && !exactDone.count(all[i].layout.str()))
        todo.push_back(i);
    }
    if (todo.empty())
      break;
    for (size_t i : todo) {
      Layout l = all[i].layout;
      exactDone.insert(l.str());
      auto profile = profileLayout(l, ctx);
      ++result.compiles;
      if (!profile) {
        all[i].error = llvm::toString(profile.takeError());
        all[i].fits = false;
        all[i].doesNotFit = "compile";
        continue;
      }
      say("compiled " + l.str() + " as it is");
      all[i] = predict(l, *profile, ctx, o.memoryCap, result.globalBatch);
    }
  }
  std::stable_sort(all.begin(), all.end(), faster);
  for (Prediction &p : all) {
    if (!p.error.empty())
      result.failed.push_back({p.layout, p.error});
    else
      (p.fits ? result.ranked : result.rejected).push_back(std::move(p));
  }
  result.seconds = now() - start;
  return result;
}

} // namespace partita::planner
