//===- TrainRank.cpp - the training loop of one rank ----------------------===//
//
// Per step: forward+backward per micro-batch (gradients accumulated; under
// data parallelism the program itself all-reduces them over dp, in buckets
// that overlap its backward pass, and its loss is the global batch's), the
// mean and global-norm clipping, then the AdamW step program updating the
// forward program's weights in place. Rank 0 logs each step and writes
// loss.csv; every rank writes its parameter shards at the end.
//===----------------------------------------------------------------------===//
#include "tools/TrainRank.h"
#include "tools/InputRoles.h"
#include "compiler/onnx/OnnxImport.h"
#include "runtime/executor/Program.h"
#include "tools/TokenFile.h"
#include "tools/ToolCommon.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"
#include <chrono>
#include <cmath>
#include <cstring>
#include <map>

namespace partita {

/// Token ids from .npy (any integer type) or a flat little-endian uint16 file.
/// splitmix64: the batch sampler's generator (test/train/check_training.py mirrors it).
static uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

static Tensor hostTensor(DType t, const Shape &shape, const void *src) {
  const auto *p = static_cast<const uint8_t *>(src);
  return Tensor(t, shape, std::make_shared<std::vector<uint8_t>>(p, p + numElements(shape) * dtypeSize(t)));
}

static rt::TensorView viewOf(const Tensor &t) {
  return rt::TensorView{t.dtype(), t.shape(), const_cast<uint8_t *>(t.data())};
}

/// Learning-rate factor of optimizer step k (0-based): linear warmup over
/// --warmup-steps, then constant, linear or cosine decay to --min-lr-ratio
/// at the last step (DeepSpeed's WarmupDecayLR / WarmupCosineLR shapes).
static double lrFactor(int64_t k, const TrainOptions &o) {
  int64_t warm = o.warmup, total = o.steps;
  if (k < warm)
    return static_cast<double>(k + 1) / static_cast<double>(warm);
  if (o.schedule == "constant")
    return 1.0;
  double p = total > warm ? static_cast<double>(k - warm) / static_cast<double>(total - warm) : 1.0;
  double lo = o.minLrRatio;
  if (o.schedule == "linear")
    return 1.0 - p * (1.0 - lo);
  return lo + (1.0 - lo) * 0.5 * (1.0 + std::cos(M_PI * p));
}

/// The training loop of one rank: forward+backward, then the AdamW step
/// program; updated parameters are written into the forward program's weights.
llvm::Error trainRank(int rank, const Plan &plan, const rt::RuntimeEnv &env, const TrainOptions &o) {
  const std::string &planDir = o.planDir, &data = o.data, &outDir = o.outDir;
  const int steps = o.steps, batch = o.batch, seq = o.seq, seed = o.seed;
  const double lr = o.lr, clipNorm = o.clipNorm;
  const bool skipNonfinite = o.skipNonfinite, progressBar = o.progressBar, profile = o.profile,
             profileByNode = o.profileByNode, noOverlap = o.noOverlap;
  const RankPlan &me = plan.ranks[rank];
  auto fwdGraph = importOnnx(inDir(planDir, me.forward), compiledProgramImport(plan.weightFilePaths()));
  if (!fwdGraph)
    return fwdGraph.takeError();
  auto stepGraph = importOnnx(inDir(planDir, me.step), compiledProgramImport(plan.weightFilePaths()));
  if (!stepGraph)
    return stepGraph.takeError();
  rt::CpuDevice device;
  auto fwd = rt::Program::load(**fwdGraph, device, &env);
  if (!fwd)
    return fwd.takeError();
  auto step = rt::Program::load(**stepGraph, device, &env);
  if (!step)
    return step.takeError();
  auto tokens = TokenFile::open(data, o.dataDtype);
  if (!tokens)
    return tokens.takeError();
  int64_t B = batch, T = seq, n = tokens->size();
  std::vector<TensorSpec> inputSpecs;
  for (const auto &in : (*fwd)->inputs())
    inputSpecs.push_back({in.name, in.type});
  auto roles = trainingInputRoles(inputSpecs, o.idsInput, B, T);
  if (!roles)
    return roles.takeError();
  std::string idsName, labelsName = "labels";
  llvm::StringMap<Tensor> constantFeeds; // attention mask, position ids: the same every step
  for (const TensorSpec &in : inputSpecs) {
    InputRole role = roles->at(in.name);
    if (role == InputRole::Ids)
      idsName = in.name;
    else if (role == InputRole::Labels)
      labelsName = in.name;
    else
      constantFeeds[in.name] = constantFeed(role, in.type);
  }
  if (n < T + 2)
    return fail(data + ": " + llvm::Twine(n) + " tokens, fewer than one sequence of " + llvm::Twine(T + 1));
  std::vector<const rt::TensorView *> params;
  std::vector<Tensor> moments1, moments2;
  for (const std::string &name : plan.params) {
    const rt::TensorView *p = (*fwd)->staticTensor(name);
    if (!p)
      return fail("the forward program has no weight '" + name + "'");
    params.push_back(p);
    moments1.push_back(Tensor::zeros(p->dtype, p->shape));
    moments2.push_back(Tensor::zeros(p->dtype, p->shape));
  }
  std::unique_ptr<llvm::raw_fd_ostream> csv;
  if (rank == 0) {
    if (auto ec = llvm::sys::fs::create_directories(outDir))
      return fail("cannot create " + outDir + ": " + ec.message());
    std::error_code ec;
    csv = std::make_unique<llvm::raw_fd_ostream>(inDir(outDir, "loss.csv"), ec);
    if (ec)
      return fail("cannot write loss.csv: " + ec.message());
    *csv << "step,loss,tokens_per_s,elapsed_s\n";
  }
  // Data parallelism: this rank's replica index and the gradient group.
  int64_t dpSize = 1, dpIndex = 0;
  for (const auto &axis : plan.mesh.axes)
    if (axis.name == "dp") {
      dpSize = axis.size;
      dpIndex = plan.ranks[rank].coords.at("dp");
    }
  int64_t M = std::max(1, o.microBatches);
  llvm::StringMap<size_t> outIndex;
  for (size_t i = 0; i < (*fwd)->outputNames().size(); ++i)
    outIndex[(*fwd)->outputNames()[i]] = i;
  std::vector<size_t> gradIndex;
  for (const std::string &name : plan.params) {
    auto g = outIndex.find("grad." + name);
    if (g == outIndex.end())
      return fail("the forward program has no gradient output for '" + name + "'");
    gradIndex.push_back(g->second);
  }
  // The step updates parameters and moments in place (AdamW is elementwise):
  // its outputs are the forward program's weights and the moment buffers.
  for (size_t i = 0; i < params.size(); ++i) {
    std::string k = std::to_string(i);
    for (auto [name, buffer] : {std::pair<std::string, void *>{"p." + k + ".new", params[i]->data},
                                {"m." + k + ".new", const_cast<uint8_t *>(moments1[i].data())},
                                {"v." + k + ".new", const_cast<uint8_t *>(moments2[i].data())}})
      if (auto err = (*step)->bindOutput(name, buffer))
        return err;
  }
  // The gradients a step applies: with one micro-batch the program's own
  // output buffers, else sums over the micro-batches, accumulated here.
  std::vector<std::vector<float>> sums(M > 1 ? params.size() : 0);
  for (size_t i = 0; i < sums.size(); ++i)
    sums[i].resize(params[i]->numel());
  std::vector<float *> grad(params.size());
  for (size_t i = 0; i < sums.size(); ++i)
    grad[i] = sums[i].data();
  (*fwd)->setOverlapCollectives(!noOverlap);
  // --profile: wall time per phase of a step (rank 0 prints it at the end).
  std::map<std::string, double> phases;
  int s = 0;
  auto mark = std::chrono::steady_clock::now();
  auto phase = [&](const char *name) {
    auto now = std::chrono::steady_clock::now();
    if (profile && s > 1) // the first step includes one-time set-up
      phases[name] += std::chrono::duration<double, std::milli>(now - mark).count();
    mark = now;
  };
  (*fwd)->setProfiling(profile, profileByNode);
  (*step)->setProfiling(profile, profileByNode);
  auto start = std::chrono::steady_clock::now();
  for (s = 1; s <= steps; ++s) {
    auto stepStart = std::chrono::steady_clock::now();
    mark = stepStart;
    // Global batch of a step: dp x micro-batches x B sequences; this replica
    // takes its dp block, micro-batch by micro-batch.
    double lossSum = 0;
    for (int64_t micro = 0; micro < M; ++micro) {
      std::vector<int64_t> ids(B * T), labels(B * T);
      for (int64_t b = 0; b < B; ++b) {
        uint64_t sample = static_cast<uint64_t>(((s - 1) * dpSize + dpIndex) * M * B + micro * B + b);
        int64_t off = static_cast<int64_t>(splitmix64(static_cast<uint64_t>(seed) * 1000003ull + sample) %
                                           static_cast<uint64_t>(n - T - 1));
        for (int64_t t = 0; t < T; ++t) {
          ids[b * T + t] = (*tokens)[off + t];
          labels[b * T + t] = (*tokens)[off + t + 1];
        }
        // Large corpora are not scanned up front: each sequence is checked as it is drawn.
        if (auto err = tokens->checkRange(plan.vocab, off, off + T + 1))
          return err;
      }
      Tensor idsT = Tensor::fromInts(DType::I64, {B, T}, ids), labelsT = Tensor::fromInts(DType::I64, {B, T}, labels);
      llvm::StringMap<rt::TensorView> feeds;
      feeds[idsName] = viewOf(idsT);
      feeds[labelsName] = viewOf(labelsT);
      for (const auto &c : constantFeeds)
        feeds[c.getKey()] = viewOf(c.getValue());
      auto outs = (*fwd)->run(feeds);
      if (!outs)
        return outs.takeError();
      for (size_t i = 0; i < params.size(); ++i) {
        float *g = static_cast<float *>((*outs)[gradIndex[i]].data);
        if (M == 1) {
          grad[i] = g;
          continue;
        }
        float *acc = grad[i];
        int64_t count = params[i]->numel();
        if (micro == 0) {
          std::memcpy(acc, g, static_cast<size_t>(count) * sizeof(float));
          continue;
        }
#pragma omp parallel for if (count > (1 << 16))
        for (int64_t k = 0; k < count; ++k)
          acc[k] += g[k];
      }
      lossSum += *static_cast<const float *>((*outs)[0].data);
    }
    phase("forward+backward");
    float loss = static_cast<float>(lossSum / M);
    // Gradients are sums over M micro-batches (each the global batch's mean
    // over dp): one pass scales them to the mean and applies the clipping
    // coefficient.
    double coef = 1.0 / static_cast<double>(M);
    // Global-norm clipping: a tensor-parallel shard's square sum is summed
    // over the tp group, a replicated gradient counts once.
    if (clipNorm > 0) {
      double shardedSq = 0, replicatedSq = 0;
      for (size_t i = 0; i < params.size(); ++i) {
        const float *p = grad[i];
        int64_t count = params[i]->numel();
        double sq = 0;
#pragma omp parallel for reduction(+ : sq) if (count > (1 << 16))
        for (int64_t k = 0; k < count; ++k)
          sq += double(p[k]) * p[k];
        (i < plan.paramSharded.size() && plan.paramSharded[i] ? shardedSq : replicatedSq) += sq;
      }
      if (rt::Communicator *tpGroup = env.group("tp"); tpGroup && tpGroup->size() > 1)
        if (auto err = tpGroup->allReduce(&shardedSq, 1, DType::F64))
          return err;
      double norm = coef * std::sqrt(shardedSq + replicatedSq);
      if (!std::isfinite(norm)) {
        if (!skipNonfinite)
          return fail("step " + llvm::Twine(s) + ": the gradient norm is not finite; stopping");
        if (rank == 0)
          llvm::outs() << "step " << s << "/" << steps << ": gradient norm not finite, update skipped\n";
        continue;
      }
      coef *= std::min(1.0, clipNorm / (norm + 1e-6));
    }
    if (coef != 1.0) {
      float c = static_cast<float>(coef);
      for (size_t i = 0; i < params.size(); ++i) {
        float *p = grad[i];
        int64_t count = params[i]->numel();
#pragma omp parallel for if (count > (1 << 16))
        for (int64_t k = 0; k < count; ++k)
          p[k] *= c;
      }
    }
    if (!std::isfinite(loss)) {
      if (!skipNonfinite)
        return fail("step " + llvm::Twine(s) + ": the loss is not finite (" + std::to_string(loss) +
                    "); stopping (--skip-nonfinite skips such steps)");
      if (rank == 0)
        llvm::outs() << "step " << s << "/" << steps << "  loss " << std::to_string(loss)
                     << ": not finite, update skipped\n";
      continue;
    }
    phase("gradient scale/clip");
    // Step inputs: schedule scalars from the host, then p/g/m/v per parameter.
    float stepLr = static_cast<float>(lr * lrFactor(s - 1, o));
    float bc1 = static_cast<float>(1.0 - std::pow(plan.optimizer.beta1, s)),
          bc2 = static_cast<float>(1.0 - std::pow(plan.optimizer.beta2, s));
    Tensor lrT = Tensor::fromDoubles(DType::F32, {}, {stepLr}), bc1T = Tensor::fromDoubles(DType::F32, {}, {bc1}),
           bc2T = Tensor::fromDoubles(DType::F32, {}, {bc2});
    llvm::StringMap<rt::TensorView> stepFeeds;
    stepFeeds["lr"] = viewOf(lrT);
    stepFeeds["bc1"] = viewOf(bc1T);
    stepFeeds["bc2"] = viewOf(bc2T);
    for (size_t i = 0; i < params.size(); ++i) {
      std::string k = std::to_string(i);
      stepFeeds["p." + k] = *params[i];
      stepFeeds["g." + k] = rt::TensorView{DType::F32, params[i]->shape, grad[i]};
      stepFeeds["m." + k] = viewOf(moments1[i]);
      stepFeeds["v." + k] = viewOf(moments2[i]);
    }
    auto updated = (*step)->run(stepFeeds);
    if (!updated)
      return updated.takeError();
    (*fwd)->weightsChanged();
    phase("optimizer step");
    if (s == 1) { // the first step includes one-time set-up
      (*fwd)->clearProfile();
      (*step)->clearProfile();
    }
    if (rank == 0) {
      double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - stepStart).count();
      double tps = static_cast<double>(B * T * M * dpSize) / std::max(secs, 1e-9);
      if (progressBar) {
        int width = 30, done = static_cast<int>(width * s / std::max(1, steps));
        llvm::outs() << "\r[" << std::string(done, '#') << std::string(width - done, ' ') << "] "
                     << llvm::format("step %d/%d  loss %.4f  %.0f tokens/s  %.1f s", s, steps, loss,
                                     tps, elapsed)
                     << (s == steps ? "\n" : "");
      } else {
        llvm::outs() << llvm::format("step %d/%d  loss %.6f  %.0f tokens/s  %.2f s\n", s, steps,
                                     loss, tps, elapsed);
      }
      llvm::outs().flush();
      *csv << s << "," << llvm::format("%.8f", loss) << "," << llvm::format("%.1f", tps) << ","
           << llvm::format("%.3f", elapsed) << "\n";
    }
  }
  if (profile && rank == 0 && steps > 1) {
    double n = steps - 1;
    llvm::outs() << "profile, mean per step over steps 2.." << steps << ":\n";
    for (const auto &[name, ms] : phases)
      llvm::outs() << llvm::format("%10.2f ms  ", ms / n) << name << "\n";
    for (rt::Program *prog : {fwd->get(), step->get()}) {
      std::vector<std::pair<double, std::string>> rows;
      for (const auto &[op, entry] : prog->profile())
        rows.push_back({entry.first / n, op + " x" + std::to_string(static_cast<int>(entry.second / n))});
      std::sort(rows.rbegin(), rows.rend());
      llvm::outs() << (prog == fwd->get() ? "forward+backward program" : "optimizer program")
                   << (profileByNode ? " by node:\n" : " by op type:\n");
      for (const auto &[ms, op] : rows)
        llvm::outs() << llvm::format("%10.2f ms  ", ms) << op << "\n";
    }
  }
  // Each rank writes its parameter shards.
  std::string dir = inDir(outDir, "rank" + std::to_string(rank));
  std::vector<std::string> names;
  std::vector<Tensor> values;
  for (size_t i = 0; i < params.size(); ++i) {
    names.push_back(plan.params[i]);
    values.push_back(hostTensor(params[i]->dtype, params[i]->shape, params[i]->data));
  }
  return writeOutputFiles(dir, names, values);
}

} // namespace partita
