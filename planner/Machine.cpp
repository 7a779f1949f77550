//===- Machine.cpp --------------------------------------------------------===//
#include "planner/Machine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"
#include <cmath>

namespace partita::planner {

namespace {
/// The bundled files, as CMake read them (BundledMachines.inc: {name, json}).
struct Bundled {
  const char *name, *json;
};
const Bundled kBundled[] = {
#include "BundledMachines.inc"
};

llvm::Error fail(llvm::StringRef origin, const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), origin + ": " + msg);
}

/// A positive number at `key` of `o` (`what` names where, for the error).
llvm::Error number(const llvm::json::Object &o, llvm::StringRef key, llvm::StringRef what, llvm::StringRef origin,
                   double &out, bool required = true) {
  const llvm::json::Value *v = o.get(key);
  if (!v) {
    if (!required)
      return llvm::Error::success();
    return fail(origin, "no \"" + key + "\" in " + what);
  }
  auto d = v->getAsNumber();
  if (!d || !(*d > 0))
    return fail(origin, "\"" + key + "\" in " + what + " must be a positive number");
  out = *d;
  return llvm::Error::success();
}

llvm::Error parseLink(const llvm::json::Object &root, llvm::StringRef key, llvm::StringRef origin, Link &link) {
  const llvm::json::Object *o = root.getObject(key);
  if (!o)
    return fail(origin, "no \"" + key + "\" object (bandwidth, latency, efficiency)");
  if (auto err = number(*o, "bandwidth", key, origin, link.bandwidth))
    return err;
  if (auto err = number(*o, "latency", key, origin, link.latency))
    return err;
  if (auto err = number(*o, "efficiency", key, origin, link.efficiency, false))
    return err;
  // "measured": [[bytes, bytes/s], ...], sizes increasing (--calibrate's).
  if (const llvm::json::Value *v = o->get("measured")) {
    const llvm::json::Array *points = v->getAsArray();
    if (!points)
      return fail(origin, "\"measured\" in " + key + " must be a list of [bytes, bytes/s] pairs");
    for (const llvm::json::Value &p : *points) {
      const llvm::json::Array *pair = p.getAsArray();
      llvm::Optional<double> bytes = pair && pair->size() == 2 ? (*pair)[0].getAsNumber() : llvm::None;
      llvm::Optional<double> rate = pair && pair->size() == 2 ? (*pair)[1].getAsNumber() : llvm::None;
      if (!bytes || !rate || !(*bytes > 0) || !(*rate > 0))
        return fail(origin, "\"measured\" in " + key + ": each point is [bytes, bytes/s], both positive");
      if (!link.measured.empty() && *bytes <= link.measured.back().first)
        return fail(origin, "\"measured\" in " + key + ": the sizes must increase");
      link.measured.emplace_back(*bytes, *rate);
    }
  }
  return llvm::Error::success();
}
} // namespace

double Link::rate(double bytes) const {
  if (measured.empty())
    return bandwidth * efficiency;
  if (bytes <= measured.front().first)
    return measured.front().second;
  if (bytes >= measured.back().first)
    return measured.back().second;
  size_t hi = 1;
  while (measured[hi].first < bytes)
    ++hi;
  const auto &[x0, y0] = measured[hi - 1];
  const auto &[x1, y1] = measured[hi];
  const double at = std::log(bytes / x0) / std::log(x1 / x0);
  return y0 + at * (y1 - y0);
}

double Machine::matmulRate(DType dtype) const {
  const char *key = dtype == DType::BF16 ? "bf16" : dtype == DType::F16 ? "fp16" : "fp32";
  auto it = matmulFlops.find(key);
  double rate = it != matmulFlops.end() ? it->second : matmulFlops.count("fp32") ? matmulFlops.at("fp32") : vectorFlops;
  return rate * matmulEfficiency;
}

std::vector<std::string> bundledMachines() {
  std::vector<std::string> names;
  for (const Bundled &b : kBundled)
    names.push_back(b.name);
  return names;
}

llvm::Expected<Machine> parseMachine(llvm::StringRef text, llvm::StringRef origin) {
  auto parsed = llvm::json::parse(text);
  if (!parsed)
    return fail(origin, "not JSON: " + llvm::toString(parsed.takeError()));
  const llvm::json::Object *root = parsed->getAsObject();
  if (!root)
    return fail(origin, "not a JSON object");
  Machine m;
  if (auto name = root->getString("name"))
    m.name = name->str();
  const llvm::json::Object *device = root->getObject("device");
  if (!device)
    return fail(origin, "no \"device\" object");
  if (auto err = number(*device, "memory_bytes", "device", origin, m.memoryBytes))
    return std::move(err);
  if (auto err = number(*device, "vector_flops", "device", origin, m.vectorFlops))
    return std::move(err);
  if (auto err = number(*device, "memory_bandwidth", "device", origin, m.memoryBandwidth))
    return std::move(err);
  if (auto err = number(*device, "transcendental_flops", "device", origin, m.transcendentalFlops, false))
    return std::move(err);
  if (m.transcendentalFlops == 0) // a GPU's special-function units: a quarter of its fp32 lanes (A100, H100)
    m.transcendentalFlops = m.vectorFlops / 4;
  if (auto err = number(*device, "matmul_efficiency", "device", origin, m.matmulEfficiency, false))
    return std::move(err);
  if (auto err = number(*device, "bandwidth_efficiency", "device", origin, m.bandwidthEfficiency, false))
    return std::move(err);
  if (const llvm::json::Value *v = device->get("kernel_overhead")) {
    auto d = v->getAsNumber();
    if (!d || *d < 0)
      return fail(origin, "\"kernel_overhead\" in device must be a number of seconds, at least 0");
    m.kernelOverhead = *d;
  }
  if (const llvm::json::Value *v = device->get("collective_overlap")) {
    auto d = v->getAsNumber();
    if (!d || *d < 0 || *d > 1)
      return fail(origin, "\"collective_overlap\" in device must be a share from 0 to 1");
    m.collectiveOverlap = *d;
  }
  if (auto b = device->getBoolean("half_gemm_through_reshapes"))
    m.halfGemmThroughReshapes = *b;
  const llvm::json::Object *rates = device->getObject("matmul_flops");
  if (!rates || rates->empty())
    return fail(origin, "no \"matmul_flops\" object in device (FLOP/s per dtype: fp32, bf16, fp16)");
  for (const auto &kv : *rates) {
    auto d = kv.second.getAsNumber();
    if (!d || !(*d > 0))
      return fail(origin, "matmul_flops \"" + kv.first.str() + "\" must be a positive number");
    m.matmulFlops[kv.first.str()] = *d;
  }
  if (!m.matmulFlops.count("fp32"))
    return fail(origin, "matmul_flops has no \"fp32\" rate");
  double perNode = 0;
  if (auto err = number(*root, "devices_per_node", "the file", origin, perNode))
    return std::move(err);
  if (perNode != static_cast<double>(static_cast<int>(perNode)))
    return fail(origin, "\"devices_per_node\" must be a whole number, at least 1");
  m.devicesPerNode = static_cast<int>(perNode);
  if (auto err = parseLink(*root, "intra_node", origin, m.intraNode))
    return std::move(err);
  if (auto err = parseLink(*root, "inter_node", origin, m.interNode))
    return std::move(err);
  for (double e : {m.matmulEfficiency, m.bandwidthEfficiency, m.intraNode.efficiency, m.interNode.efficiency})
    if (e > 1)
      return fail(origin, "an efficiency is a share of a rate: at most 1");
  if (const llvm::json::Array *sources = root->getArray("sources"))
    for (const llvm::json::Value &s : *sources)
      if (auto str = s.getAsString())
        m.sources.push_back(str->str());
  return m;
}

llvm::Expected<Machine> loadMachine(const std::string &spec) {
  for (const Bundled &b : kBundled)
    if (spec == b.name)
      return parseMachine(b.json, "machine " + spec);
  auto buffer = llvm::MemoryBuffer::getFile(spec);
  if (!buffer) {
    std::string names;
    for (const Bundled &b : kBundled)
      names += (names.empty() ? "" : ", ") + std::string(b.name);
    return fail("--machine " + spec, "no such file, and no bundled machine of that name (bundled: " + names + ")");
  }
  return parseMachine((*buffer)->getBuffer(), spec);
}

std::string machineJson(const Machine &m) {
  llvm::json::Object rates;
  for (const auto &[k, v] : m.matmulFlops)
    rates[k] = v;
  auto link = [](const Link &l) {
    llvm::json::Object o{{"bandwidth", l.bandwidth}, {"latency", l.latency}, {"efficiency", l.efficiency}};
    if (!l.measured.empty()) {
      llvm::json::Array points;
      for (const auto &[bytes, rate] : l.measured)
        points.push_back(llvm::json::Array{bytes, rate});
      o["measured"] = std::move(points);
    }
    return o;
  };
  llvm::json::Array sources;
  for (const std::string &s : m.sources)
    sources.push_back(s);
  llvm::json::Object root{
      {"name", m.name},
      {"device", llvm::json::Object{{"memory_bytes", m.memoryBytes},
                                    {"matmul_flops", std::move(rates)},
                                    {"vector_flops", m.vectorFlops},
                                    {"transcendental_flops", m.transcendentalFlops},
                                    {"memory_bandwidth", m.memoryBandwidth},
                                    {"matmul_efficiency", m.matmulEfficiency},
                                    {"bandwidth_efficiency", m.bandwidthEfficiency},
                                    {"kernel_overhead", m.kernelOverhead},
                                    {"collective_overlap", m.collectiveOverlap},
                                    {"half_gemm_through_reshapes", m.halfGemmThroughReshapes}}},
      {"devices_per_node", m.devicesPerNode},
      {"intra_node", link(m.intraNode)},
      {"inter_node", link(m.interNode)},
      {"sources", std::move(sources)}};
  std::string out;
  llvm::raw_string_ostream os(out);
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(root))) << "\n";
  return os.str();
}

} // namespace partita::planner
