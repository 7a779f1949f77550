//===- Plan.cpp -----------------------------------------------------------===//
#include "compiler/plan/Plan.h"
#include "compiler/support/OutputFile.h"
#include <chrono>
#include <cmath>
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SHA256.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/raw_ostream.h"

namespace partita {

std::string chunkProgram(llvm::StringRef base, int64_t stage, const Plan &p) {
  int64_t chunk = stage / std::max<int64_t>(1, p.stages());
  return chunk == 0 ? base.str() : (base + "." + llvm::Twine(chunk)).str();
}

bool isSharedWeightCopy(const Plan &p, llvm::StringRef name) {
  return llvm::any_of(p.pipelineWeights, [&](const Plan::Edge &e) { return sharedWeightCopy(e.value, e.to) == name; });
}

Plan makePlan(const Mesh &mesh) {
  Plan p;
  p.mesh = mesh;
  int64_t world = mesh.numDevices();
  for (int64_t r = 0; r < world; ++r) {
    RankPlan rp;
    rp.rank = r;
    int64_t rem = r;
    for (auto it = mesh.axes.rbegin(); it != mesh.axes.rend(); ++it) {
      rp.coords[it->name] = rem % it->size;
      rem /= it->size;
    }
    rp.programs[kForwardProgram] = "rank" + std::to_string(r) + "/forward.onnx";
    p.ranks.push_back(rp);
  }
  for (const auto &axis : mesh.axes) {
    std::map<std::vector<int64_t>, std::vector<int64_t>> byOthers;
    for (const auto &rp : p.ranks) {
      std::vector<int64_t> key;
      for (const auto &a : mesh.axes)
        if (a.name != axis.name)
          key.push_back(rp.coords.at(a.name));
      byOthers[key].push_back(rp.rank);
    }
    for (auto &[k, g] : byOthers)
      p.groups[axis.name].push_back(g);
  }
  return p;
}

namespace {
llvm::json::Value specs(const std::vector<TensorSpec> &v) {
  llvm::json::Array a;
  a.reserve(v.size()); // json::Value's move may throw: a growing vector would copy every element
  for (const auto &s : v) {
    llvm::json::Array shape;
    for (int64_t d : s.type.shape)
      shape.push_back(d);
    a.push_back(llvm::json::Object{{"name", s.name}, {"dtype", dtypeName(s.type.dtype)}, {"shape", std::move(shape)}});
  }
  return std::move(a);
}

llvm::Error fail(llvm::StringRef path, const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), path + ": " + msg);
}

bool readSpecs(const llvm::json::Array *a, std::vector<TensorSpec> &out) {
  if (!a)
    return false;
  for (const auto &e : *a) {
    const auto *o = e.getAsObject();
    if (!o)
      return false;
    TensorSpec s;
    auto name = o->getString("name");
    auto dt = o->getString("dtype");
    const auto *shape = o->getArray("shape");
    if (!name || !dt || !shape || !parseDType(*dt))
      return false;
    s.name = name->str();
    s.type.dtype = *parseDType(*dt);
    s.type.known = true;
    int64_t bytes = 16; // the widest element: sizes computed from the shape must not overflow
    for (const auto &d : *shape) {
      auto v = d.getAsInteger();
      if (!v || *v < 0 || __builtin_mul_overflow(bytes, *v, &bytes))
        return false;
      s.type.shape.push_back(*v);
    }
    out.push_back(s);
  }
  return true;
}
} // namespace

llvm::Error writePlan(const Plan &p, llvm::StringRef path) {
  llvm::json::Object mesh;
  llvm::json::Array axes;
  for (const auto &a : p.mesh.axes)
    axes.push_back(llvm::json::Object{{"name", a.name}, {"size", a.size}});
  // A rank entry is its coordinates and its role: the program files (and
  // their hashes) it runs, which the ranks that differ only by coordinates
  // the runtime supplies share (dp replicas): the plan grows by a line per
  // rank, not by a copy of its programs' names.
  llvm::json::Array ranks, roles;
  std::map<std::pair<std::map<std::string, std::string>, std::map<std::string, std::string>>, int64_t> roleOf;
  for (const auto &r : p.ranks) {
    llvm::json::Object coords;
    for (const auto &[k, v] : r.coords)
      coords[k] = v;
    auto [it, added] = roleOf.try_emplace({r.programs, r.sha256}, static_cast<int64_t>(roles.size()));
    if (added) {
      llvm::json::Object programs;
      for (const auto &[name, rel] : r.programs)
        programs[name] = rel;
      llvm::json::Object hashes;
      for (const auto &[file, h] : r.sha256)
        hashes[file] = h;
      roles.push_back(llvm::json::Object{{"programs", std::move(programs)}, {"sha256", std::move(hashes)}});
    }
    ranks.push_back(llvm::json::Object{{"rank", r.rank}, {"coords", std::move(coords)}, {"role", it->second}});
  }
  llvm::json::Object groups;
  for (const auto &[axis, gs] : p.groups) {
    llvm::json::Array arr;
    for (const auto &g : gs) {
      llvm::json::Array members;
      for (int64_t r : g)
        members.push_back(r);
      arr.push_back(std::move(members));
    }
    groups[axis] = std::move(arr);
  }
  llvm::json::Array coverage;
  for (const auto &c : p.coverage)
    coverage.push_back(c);
  llvm::json::Array params, paramTypes;
  for (const auto &c : p.params)
    params.push_back(c);
  std::vector<TensorSpec> typeSpecs;
  for (size_t i = 0; i < p.paramTypes.size(); ++i)
    typeSpecs.push_back({p.params.at(i), p.paramTypes[i]});
  llvm::json::Array partitioned;
  for (bool b : p.paramPartitioned)
    partitioned.push_back(b);
  llvm::json::Object ranges;
  for (const auto &[name, rows] : p.indexRanges)
    ranges[name] = rows;
  auto ints = [](llvm::ArrayRef<int64_t> v) {
    llvm::json::Array a;
    for (int64_t x : v)
      a.push_back(x);
    return a;
  };
  llvm::json::Array targets;
  for (const auto &ts : p.paramTargets) {
    llvm::json::Array one;
    for (const ParamTarget &t : ts) {
      llvm::json::Object o{
          {"initializer", t.initializer}, {"perm", ints(t.perm)}, {"start", ints(t.start)}, {"shape", ints(t.shape)}};
      if (!t.repeat.empty())
        o["repeat"] = ints(t.repeat);
      if (!t.stored.empty())
        o["stored"] = ints(t.stored);
      one.push_back(std::move(o));
    }
    targets.push_back(std::move(one));
  }
  llvm::json::Array weightFiles;
  for (const WeightFile &f : p.weightFiles)
    weightFiles.push_back(llvm::json::Object{{"path", f.path}, {"size", static_cast<int64_t>(f.size)},
                                             {"mtime_ns", f.mtimeNs}});
  llvm::json::Array initializers;
  for (const InitializerClass &c : p.initializers)
    initializers.push_back(llvm::json::Object{{"name", c.name}, {"trainable", c.trainable}, {"reason", c.reason}});
  llvm::json::Array order, saved, layouts;
  for (const std::string &n : p.scheduleOrder)
    order.push_back(n);
  for (const std::string &n : p.saved)
    saved.push_back(n);
  for (const auto &l : p.paramLayouts) {
    llvm::json::Object o;
    for (const auto &[axis, layout] : l)
      o[axis] = layout;
    layouts.push_back(std::move(o));
  }
  llvm::json::Array stagesOfParams;
  for (int64_t st : p.paramStages)
    stagesOfParams.push_back(st);
  auto edgeList = [](const std::vector<Plan::Edge> &list) {
    llvm::json::Array edges;
    for (const Plan::Edge &e : list)
      edges.push_back(llvm::json::Object{{"value", e.value}, {"from", e.from}, {"to", e.to}});
    return edges;
  };
  llvm::json::Object root{{"format", kPlanFormatName},
                          {"param_stages", std::move(stagesOfParams)},
                          {"pipeline_edges", edgeList(p.pipelineEdges)},
                          {"pipeline_weights", edgeList(p.pipelineWeights)},
                          {"virtual_stages", p.virtualStages},
                          {"precision", p.precision},
                          {"schedule", llvm::json::Object{{"kind", p.schedule}, {"order", std::move(order)},
                                                          {"saved", std::move(saved)}}},
                          {"param_layouts", std::move(layouts)},
                          {"world_size", p.worldSize()},
                          {"mesh", std::move(axes)},
                          {"ranks", std::move(ranks)},
                          {"roles", std::move(roles)},
                          {"groups", std::move(groups)},
                          {"inputs", specs(p.inputs)},
                          {"outputs", specs(p.outputs)},
                          {"coverage", std::move(coverage)},
                          {"params", std::move(params)},
                          {"param_types", specs(typeSpecs)},
                          {"param_partitioned", std::move(partitioned)},
                          {"param_targets", std::move(targets)},
                          {"weight_files", std::move(weightFiles)},
                          {"optimizer", llvm::json::Object{{"type", "adamw"},
                                                           {"beta1", p.optimizer.beta1},
                                                           {"beta2", p.optimizer.beta2},
                                                           {"eps", p.optimizer.eps},
                                                           {"weight_decay", p.optimizer.weightDecay}}},
                          {"index_ranges", std::move(ranges)},
                          {"initializers", std::move(initializers)},
                          {"vocab", p.vocab},
                          {"zero", p.zero}};
  // Written as a stream: program_io (every program's inputs and outputs, the
  // bulk of a large plan) is not built as a tree first. Keys in sorted order,
  // as llvm::json prints an object.
  std::vector<std::string> keys{"program_io"};
  for (const auto &kv : root)
    keys.push_back(kv.first.str());
  llvm::sort(keys);
  auto spec = [](llvm::json::OStream &j, const TensorSpec &s) {
    j.object([&] {
      j.attribute("dtype", dtypeName(s.type.dtype));
      j.attribute("name", s.name);
      j.attributeArray("shape", [&] {
        for (int64_t d : s.type.shape)
          j.value(d);
      });
    });
  };
  return writeFile(path, [&](llvm::raw_ostream &os) {
    llvm::json::OStream j(os, 2);
    j.object([&] {
      for (const std::string &key : keys) {
        if (key != "program_io") {
          j.attribute(key, *root.get(key));
          continue;
        }
        j.attributeObject(key, [&] {
          for (const auto &entry : p.programIO) {
            // A named reference, not a structured binding: C++17 lambdas cannot capture those
            // (clang refuses; the fuzz and sanitizer builds use clang).
            const auto &pio = entry.second;
            j.attributeObject(entry.first, [&] {
              j.attributeArray("inputs", [&] { for (const TensorSpec &s : pio.inputs) spec(j, s); });
              j.attributeArray("outputs", [&] { for (const TensorSpec &s : pio.outputs) spec(j, s); });
            });
          }
        });
      }
    });
    os << "\n";
  });
}

/// The ranks and groups are exactly those the mesh makes (makePlan's): entry k
/// is rank k with k's row-major coordinates, and each axis's groups are the
/// ranks that differ only on it. Counting entries is not enough: a plan that
/// lists rank 0 twice would have MPI rank 1 run rank 0's role.
static llvm::Error checkRanksAndGroups(const Plan &p, llvm::StringRef path) {
  auto bad = [&](const llvm::Twine &what) { return fail(path, "corrupt plan: " + what); };
  const int64_t n = p.mesh.numDevices();
  std::vector<int64_t> entries(static_cast<size_t>(n), -1); // rank -> its entry
  for (size_t i = 0; i < p.ranks.size(); ++i) {
    int64_t r = p.ranks[i].rank;
    if (r < 0 || r >= n)
      return bad("rank entry " + llvm::Twine(i) + " is rank " + llvm::Twine(r) + ", outside the mesh's 0.." +
                 llvm::Twine(n - 1) + " (" + p.mesh.str() + ")");
    if (entries[r] >= 0)
      return bad("rank " + llvm::Twine(r) + " is listed twice (entries " + llvm::Twine(entries[r]) + " and " +
                 llvm::Twine(i) + ")");
    entries[r] = static_cast<int64_t>(i);
  }
  for (int64_t r = 0; r < n; ++r)
    if (entries[r] < 0)
      return bad("rank " + llvm::Twine(r) + " of the mesh's " + llvm::Twine(n) + " (" + p.mesh.str() +
                 ") has no entry");
  // Every rank 0..n-1 once and none outside: there are exactly n entries.
  const Plan want = makePlan(p.mesh); // only now: a corrupt mesh of 2^20 ranks must not cost a table of them
  auto coordsText = [](const std::map<std::string, int64_t> &c) {
    std::string s;
    for (const auto &[axis, v] : c)
      s += (s.empty() ? "" : ", ") + axis + " " + std::to_string(v);
    return "{" + s + "}";
  };
  for (int64_t r = 0; r < n; ++r) {
    const RankPlan &got = p.ranks[r];
    if (got.rank != r)
      return bad("entry " + llvm::Twine(r) + " is rank " + llvm::Twine(got.rank) +
                 ": the rank entries must be in rank order");
    if (got.coords != want.ranks[r].coords)
      return bad("rank " + llvm::Twine(r) + " has coordinates " + coordsText(got.coords) + "; the mesh " +
                 p.mesh.str() + " gives it " + coordsText(want.ranks[r].coords));
  }
  for (const auto &[axis, groups] : p.groups)
    if (!want.groups.count(axis))
      return bad("groups along '" + axis + "', which is no axis of the mesh " + p.mesh.str());
  for (const auto &[axis, groups] : want.groups) {
    auto it = p.groups.find(axis);
    if (it == p.groups.end())
      return bad("no groups along mesh axis '" + axis + "'");
    if (it->second != groups)
      return bad("the groups along '" + axis + "' are not the mesh's (each the ranks that differ only on '" + axis +
                 "')");
  }
  return llvm::Error::success();
}

llvm::Expected<Plan> readPlan(llvm::StringRef path) {
  auto buf = llvm::MemoryBuffer::getFile(path);
  if (!buf)
    return fail(path, "cannot read: " + buf.getError().message());
  auto json = llvm::json::parse((*buf)->getBuffer());
  if (!json)
    return fail(path, "corrupt plan (not JSON): " + llvm::toString(json.takeError()));
  const auto *root = json->getAsObject();
  auto bad = [&](const llvm::Twine &what) { return fail(path, "corrupt plan: " + what); };
  // partita-plan-2 had each rank's programs and hashes in its entry; -3 a role.
  bool inlineRanks = root && root->getString("format") == llvm::Optional<llvm::StringRef>("partita-plan-2");
  if (auto format = root ? root->getString("format") : llvm::None;
      format && format->startswith("partita-plan-") && *format != kPlanFormatName && !inlineRanks)
    return fail(path, "a plan of format " + *format +
                          (*format == "partita-plan-1" ? " (an older Partita's: one program for forward and backward)"
                                                       : "") +
                          "; this Partita runs " + kPlanFormatName + ": recompile the model with partita compile");
  if (!root || (root->getString("format") != llvm::Optional<llvm::StringRef>(kPlanFormatName) && !inlineRanks))
    return fail(path, llvm::Twine("corrupt plan: missing format ") + kPlanFormatName);
  Plan p;
  const auto *axes = root->getArray("mesh");
  if (!axes)
    return bad("no mesh");
  int64_t world = 1;
  for (const auto &a : *axes) {
    const auto *o = a.getAsObject();
    if (!o || !o->getString("name") || !o->getInteger("size"))
      return bad("bad mesh axis");
    // Positive, and at most 2^20 ranks in all: the product must not overflow.
    int64_t size = *o->getInteger("size");
    if (size < 1 || size > (int64_t(1) << 20) / world)
      return bad("mesh axis size out of range");
    world *= size;
    if (p.mesh.find(*o->getString("name")))
      return bad("mesh axis '" + *o->getString("name") + "' appears twice");
    p.mesh.axes.push_back({o->getString("name")->str(), size});
  }
  const auto *ranks = root->getArray("ranks");
  if (!ranks)
    return bad("no ranks");
  const auto *roles = root->getArray("roles");
  if (!inlineRanks && !roles)
    return bad("no roles");
  for (const auto &r : *ranks) {
    const auto *o = r.getAsObject();
    // The programs and hashes: the rank's role's (or, in a plan-2, its own).
    const llvm::json::Object *role = o;
    if (!inlineRanks) {
      auto k = o ? o->getInteger("role") : llvm::None;
      if (!k || *k < 0 || static_cast<size_t>(*k) >= roles->size())
        return bad("bad rank entry (no role of the plan's)");
      role = (*roles)[static_cast<size_t>(*k)].getAsObject();
    }
    const auto *progs = role ? role->getObject("programs") : nullptr;
    if (!o || !o->getInteger("rank") || !progs || !progs->getString(kForwardProgram))
      return bad("bad rank entry");
    RankPlan rp;
    rp.rank = *o->getInteger("rank");
    for (const auto &kv : *progs)
      if (auto rel = kv.second.getAsString())
        rp.programs[kv.first.str()] = rel->str();
    if (const auto *hashes = role->getObject("sha256"))
      for (const auto &kv : *hashes)
        if (auto h = kv.second.getAsString())
          rp.sha256[kv.first.str()] = h->str();
    if (const auto *coords = o->getObject("coords"))
      for (const auto &kv : *coords)
        if (auto v = kv.second.getAsInteger())
          rp.coords[kv.first.str()] = *v;
    p.ranks.push_back(rp);
  }
  if (const auto *groups = root->getObject("groups"))
    for (const auto &kv : *groups)
      if (const auto *arr = kv.second.getAsArray())
        for (const auto &g : *arr) {
          std::vector<int64_t> members;
          if (const auto *m = g.getAsArray())
            for (const auto &x : *m)
              if (auto v = x.getAsInteger())
                members.push_back(*v);
          p.groups[kv.first.str()].push_back(members);
        }
  if (!readSpecs(root->getArray("inputs"), p.inputs) || !readSpecs(root->getArray("outputs"), p.outputs))
    return bad("bad inputs/outputs");
  if (const auto *io = root->getObject("program_io"))
    for (const auto &kv : *io) {
      const auto *o = kv.second.getAsObject();
      ProgramIO pio;
      if (!o || !readSpecs(o->getArray("inputs"), pio.inputs) || !readSpecs(o->getArray("outputs"), pio.outputs))
        return bad("bad program_io entry");
      p.programIO[kv.first.str()] = std::move(pio);
    }
  const auto *schedule = root->getObject("schedule");
  if (!schedule || !schedule->getString("kind") || !schedule->getArray("order"))
    return bad("no schedule (kind, order)");
  p.schedule = schedule->getString("kind")->str();
  p.scheduleOrder.clear();
  auto strings = [](const llvm::json::Array *a, std::vector<std::string> &out) {
    for (size_t i = 0; a && i < a->size(); ++i)
      if (auto v = (*a)[i].getAsString())
        out.push_back(v->str());
      else
        return false;
    return true;
  };
  if (!strings(schedule->getArray("order"), p.scheduleOrder) || !strings(schedule->getArray("saved"), p.saved))
    return bad("bad schedule entry");
  for (const RankPlan &r : p.ranks)
    for (const std::string &n : p.scheduleOrder)
      if (r.program(n).empty())
        return fail(path, "corrupt plan: rank " + llvm::Twine(r.rank) + " has no program '" + n +
                              "', which the schedule runs");
  if (const auto *cov = root->getArray("coverage"))
    for (const auto &c : *cov)
      if (auto s = c.getAsString())
        p.coverage.push_back(s->str());
  if (const auto *params = root->getArray("params"))
    for (const auto &c : *params)
      if (auto s = c.getAsString())
        p.params.push_back(s->str());
  if (auto v = root->getInteger("vocab"))
    p.vocab = *v;
  if (auto v = root->getInteger("zero"))
    p.zero = *v;
  if (auto v = root->getString("precision")) { // absent in plans written before mixed precision
    if (*v != "fp32" && *v != "bf16" && *v != "fp16")
      return bad("precision '" + v->str() + "' (fp32, bf16 or fp16)");
    p.precision = v->str();
  }
  if (auto v = root->getInteger("virtual_stages")) {
    if (*v < 1 || *v > 1024)
      return bad("virtual_stages out of range");
    p.virtualStages = *v;
  }
  if (const auto *layouts = root->getArray("param_layouts")) {
    for (const auto &l : *layouts) {
      const auto *o = l.getAsObject();
      if (!o)
        return bad("bad param_layouts entry");
      std::map<std::string, std::string> one;
      for (const auto &kv : *o)
        if (auto v = kv.second.getAsString())
          one[kv.first.str()] = v->str();
      p.paramLayouts.push_back(std::move(one));
    }
    if (p.paramLayouts.size() != p.params.size())
      return bad("param_layouts do not match params");
  }
  std::vector<TensorSpec> typeSpecs;
  if (const auto *types = root->getArray("param_types")) {
    if (!readSpecs(types, typeSpecs) || typeSpecs.size() != p.params.size())
      return bad("param_types do not match params");
    for (const TensorSpec &t : typeSpecs)
      p.paramTypes.push_back(t.type);
  }
  if (const auto *st = root->getArray("param_stages")) {
    for (const llvm::json::Value &v : *st) {
      auto k = v.getAsInteger();
      if (!k || *k < 0)
        return bad("param_stages holds something other than a stage number");
      p.paramStages.push_back(*k);
    }
    if (!p.paramStages.empty() && p.paramStages.size() != p.params.size())
      return bad("param_stages does not match params");
  }
  for (auto [key, list] : {std::pair{"pipeline_edges", &p.pipelineEdges}, {"pipeline_weights", &p.pipelineWeights}})
    if (const auto *edges = root->getArray(key))
      for (const llvm::json::Value &v : *edges) {
        const auto *o = v.getAsObject();
        auto value = o ? o->getString("value") : llvm::None;
        auto from = o ? o->getInteger("from") : llvm::None;
        auto to = o ? o->getInteger("to") : llvm::None;
        if (!value || !from || !to || *from < 0 || *to < 0)
          return bad(key == std::string("pipeline_edges") ? "bad pipeline_edges entry (value, from, to)"
                                                          : "bad pipeline_weights entry (value, from, to)");
        list->push_back({value->str(), *from, *to});
      }
  if (const auto *parts = root->getArray("param_partitioned")) {
    for (const llvm::json::Value &v : *parts) {
      auto b = v.getAsBoolean();
      if (!b)
        return bad("param_partitioned holds a non-boolean");
      p.paramPartitioned.push_back(*b);
    }
    if (!p.paramPartitioned.empty() && p.paramPartitioned.size() != p.params.size())
      return bad("param_partitioned does not match params");
  }
  if (const auto *targets = root->getArray("param_targets")) {
    auto readInts = [](const llvm::json::Object &o, llvm::StringRef key, auto &out) {
      const auto *a = o.getArray(key);
      for (size_t i = 0; a && i < a->size(); ++i)
        if (auto v = (*a)[i].getAsInteger())
          out.push_back(*v);
        else
          return false;
      return a != nullptr;
    };
    for (const auto &ts : *targets) {
      const auto *arr = ts.getAsArray();
      if (!arr || arr->empty())
        return bad("bad param_targets entry");
      std::vector<ParamTarget> one;
      for (const auto &t : *arr) {
        const auto *o = t.getAsObject();
        ParamTarget pt;
        if (!o || !o->getString("initializer") || !readInts(*o, "perm", pt.perm) ||
            !readInts(*o, "start", pt.start) || !readInts(*o, "shape", pt.shape))
          return bad("bad param_targets entry");
        pt.initializer = o->getString("initializer")->str();
        if ((o->get("repeat") && !readInts(*o, "repeat", pt.repeat)) ||
            (o->get("stored") && !readInts(*o, "stored", pt.stored)))
          return bad("bad param_targets entry");
        std::vector<bool> seen(pt.perm.size());
        bool ok = pt.start.empty() || pt.start.size() == pt.shape.size();
        if (!pt.repeat.empty()) // [dim, block, times]: whole runs of copies along a dim of the shape
          ok = ok && pt.repeat.size() == 3 && pt.repeat[0] >= 0 &&
               pt.repeat[0] < static_cast<int64_t>(pt.shape.size()) && pt.repeat[1] > 0 && pt.repeat[2] > 0 &&
               pt.shape[static_cast<size_t>(pt.repeat[0])] % (pt.repeat[1] * pt.repeat[2]) == 0;
        for (int64_t d : pt.perm) // a permutation of 0..n-1, or empty
          ok = ok && d >= 0 && d < static_cast<int64_t>(seen.size()) && !seen[d] && (seen[d] = true);
        for (int64_t v : pt.start)
          ok = ok && v >= 0;
        for (int64_t v : pt.shape)
          ok = ok && v >= 0;
        if (!ok)
          return bad("bad param_targets entry (perm must be a permutation; start and shape non-negative, of one "
                     "rank)");
        one.push_back(std::move(pt));
      }
      p.paramTargets.push_back(std::move(one));
    }
    if (p.paramTargets.size() != p.params.size())
      return bad("param_targets do not match params");
  }
  if (const auto *files = root->getArray("weight_files"))
    for (const auto &f : *files) {
      const auto *o = f.getAsObject();
      auto size = o ? o->getInteger("size") : llvm::None;
      auto mtime = o ? o->getInteger("mtime_ns") : llvm::None;
      if (!o || !o->getString("path") || !size || *size < 0 || !mtime ||
          !llvm::sys::path::is_absolute(*o->getString("path")))
        return bad("bad weight_files entry (an absolute path, size, mtime_ns)");
      p.weightFiles.push_back({o->getString("path")->str(), static_cast<uint64_t>(*size), *mtime});
    }
  if (const auto *opt = root->getObject("optimizer")) {
    auto num = [&](llvm::StringRef key, double &out) {
      if (auto v = opt->getNumber(key))
        out = *v;
      else
        return false;
      return true;
    };
    if (opt->getString("type").getValueOr("") != "adamw" || !num("beta1", p.optimizer.beta1) ||
        !num("beta2", p.optimizer.beta2) || !num("eps", p.optimizer.eps) ||
        !num("weight_decay", p.optimizer.weightDecay))
      return bad("bad optimizer entry (type adamw with beta1, beta2, eps, weight_decay)");
    if (!p.optimizer.valid())
      return bad("optimizer values out of range (betas in [0, 1), eps > 0, weight_decay >= 0)");
  }
  if (const auto *ranges = root->getObject("index_ranges"))
    for (const auto &kv : *ranges)
      if (auto v = kv.second.getAsInteger())
        p.indexRanges[kv.first.str()] = *v;
  if (const auto *inits = root->getArray("initializers"))
    for (const auto &c : *inits) {
      const auto *o = c.getAsObject();
      if (!o || !o->getString("name") || !o->getBoolean("trainable"))
        return bad("bad initializers entry");
      p.initializers.push_back({o->getString("name")->str(), *o->getBoolean("trainable"),
                                o->getString("reason").getValueOr("").str()});
    }
  if (auto err = checkRanksAndGroups(p, path))
    return std::move(err);
  // Pipelines: stages (model chunks) are within pp x virtual_stages.
  const int64_t stages = p.globalStages();
  if (p.virtualStages > 1 && p.stages() < 2)
    return bad("virtual_stages without a pp axis");
  for (const auto *list : {&p.pipelineEdges, &p.pipelineWeights})
    for (const Plan::Edge &e : *list)
      if (e.from >= stages || e.to >= stages || e.from == e.to || p.stages() < 2)
        return bad("pipeline edge of value '" + e.value + "' joins stages outside the plan's");
  for (int64_t s : p.paramStages)
    if (s >= stages)
      return bad("param_stages names a stage outside the plan's");
  return p;
}

bool statWeightFile(llvm::StringRef path, WeightFile &out) {
  llvm::sys::fs::file_status st;
  if (llvm::sys::fs::status(path, st) || st.type() != llvm::sys::fs::file_type::regular_file)
    return false;
  out.path = path.str();
  out.size = st.getSize();
  out.mtimeNs = std::chrono::duration_cast<std::chrono::nanoseconds>(
                    st.getLastModificationTime().time_since_epoch())
                    .count();
  return true;
}

llvm::Error checkWeightFiles(const Plan &p) {
  for (const WeightFile &f : p.weightFiles) {
    WeightFile now;
    if (!statWeightFile(f.path, now))
      return fail(f.path, "the model's weights, which the compiled programs read by reference, are gone (moved "
                          "or deleted since compile): compile again");
    if (now.size != f.size || now.mtimeNs != f.mtimeNs)
      return fail(f.path, "the model's weights changed since compile (" +
                              (now.size != f.size ? "size " + llvm::Twine(f.size) + " -> " + llvm::Twine(now.size) +
                                                        " bytes"
                                                  : llvm::Twine("same size, another modification time")) +
                              "): compile again (--materialize-weights keeps a copy with the plan)");
  }
  return llvm::Error::success();
}

static std::string sha256Hex(llvm::StringRef bytes) {
  llvm::SHA256 h;
  h.update(bytes);
  return llvm::toHex(h.final(), /*LowerCase=*/true);
}

llvm::Expected<std::string> sha256File(llvm::StringRef path) {
  // In 1 MiB pieces: a weights file may be large.
  llvm::Expected<llvm::sys::fs::file_t> fd = llvm::sys::fs::openNativeFileForRead(path);
  if (!fd)
    return fail(path, "cannot read: " + llvm::toString(fd.takeError()));
  llvm::SHA256 h;
  std::vector<char> chunk(1 << 20);
  for (;;) {
    llvm::Expected<size_t> got = llvm::sys::fs::readNativeFile(*fd, llvm::MutableArrayRef<char>(chunk));
    if (!got) {
      llvm::sys::fs::closeFile(*fd);
      return fail(path, "cannot read: " + llvm::toString(got.takeError()));
    }
    if (*got == 0)
      break;
    h.update(llvm::StringRef(chunk.data(), *got));
  }
  llvm::sys::fs::closeFile(*fd);
  return llvm::toHex(h.final(), /*LowerCase=*/true);
}

llvm::Error recordProgramHash(RankPlan &rank, llvm::StringRef dir, llvm::StringRef rel) {
  llvm::SmallString<256> path(dir);
  llvm::sys::path::append(path, rel);
  auto h = sha256File(path);
  if (!h)
    return h.takeError();
  rank.sha256[rel.str()] = *h;
  return llvm::Error::success();
}

llvm::Error checkProgramHash(const RankPlan &r, llvm::StringRef dir, llvm::StringRef rel,
                             llvm::Optional<llvm::StringRef> bytes) {
  llvm::SmallString<256> path(dir);
  llvm::sys::path::append(path, rel);
  auto want = r.sha256.find(rel.str());
  if (want == r.sha256.end())
    return fail(path, "the plan records no SHA-256 for rank " + llvm::Twine(r.rank) +
                          "'s program (compiled by an older Partita? compile again)");
  auto h = bytes ? llvm::Expected<std::string>(sha256Hex(*bytes)) : sha256File(path);
  if (!h)
    return h.takeError();
  if (*h != want->second)
    return fail(path, llvm::Twine(rel == rankWeightsFile(r)         ? "not the weights file"
                                  : rel == kSharedConstantsFile ? "not the constants file"
                                                                : "not the program") +
                          " compiled for rank " + llvm::Twine(r.rank) +
                          " (its SHA-256 differs from plan.json's): another rank's or another compile's file");
  return llvm::Error::success();
}

ImportOptions compiledProgramImport(llvm::ArrayRef<std::string> weightFiles,
                                    const std::map<std::string, int64_t> &coordinates) {
  ImportOptions o;
  o.trustedLocations = true;
  o.trustedFiles.assign(weightFiles.begin(), weightFiles.end());
  o.coordinates = coordinates;
  return o;
}

std::string rankWeightsFile(const RankPlan &r) {
  llvm::SmallString<128> rel(llvm::sys::path::parent_path(r.program(kForwardProgram), llvm::sys::path::Style::posix));
  llvm::sys::path::append(rel, llvm::sys::path::Style::posix, "weights.bin");
  return std::string(rel);
}

llvm::Error checkRankFiles(const RankPlan &r, llvm::StringRef dir, llvm::Optional<llvm::StringRef> forwardBytes) {
  for (const auto &[name, rel] : r.programs)
    if (auto err = checkProgramHash(r, dir, rel, name == kForwardProgram ? forwardBytes : llvm::None))
      return err;
  std::string weights = rankWeightsFile(r);
  llvm::SmallString<256> path(dir);
  llvm::sys::path::append(path, weights);
  if (r.sha256.count(weights) || llvm::sys::fs::exists(path))
    if (auto err = checkProgramHash(r, dir, weights))
      return err;
  for (const auto &recorded : r.sha256) { // the other files recorded: a second model chunk's weights
    const std::string &rel = recorded.first;
    if (rel != weights && !llvm::any_of(r.programs, [&](const auto &p) { return p.second == rel; }))
      if (auto err = checkProgramHash(r, dir, rel))
        return err;
  }
  return llvm::Error::success();
}

} // namespace partita
