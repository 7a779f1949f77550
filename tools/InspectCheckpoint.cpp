//===- InspectCheckpoint.cpp ----------------------------------------------===//
#include "tools/InspectCheckpoint.h"
#include "runtime/checkpoint/SavedCheckpoint.h"
#include "tools/ToolCommon.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"
#include <map>

namespace partita {

bool isCheckpointFolder(llvm::StringRef dir) {
  for (const char *name : {rt::kCheckpointIndex, rt::kLatestFile}) {
    llvm::SmallString<256> p(dir);
    llvm::sys::path::append(p, name);
    if (llvm::sys::fs::exists(p))
      return true;
  }
  return false;
}

/// Bytes as MB (1e6) with three decimals: the sizes `launch --memory` prints are GB.
static std::string megabytes(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f MB", static_cast<double>(bytes) / 1e6);
  return buf;
}

int inspectCheckpoint(llvm::StringRef dir, bool all) {
  const char *tool = "partita inspect";
  auto folder = rt::resolveCheckpoint(dir);
  if (!folder)
    return reportError(tool, folder.takeError());
  auto c = rt::SavedCheckpoint::open(*folder);
  if (!c)
    return reportError(tool, c.takeError());
  llvm::raw_ostream &os = llvm::outs();
  const rt::TrainProgress &p = c->progress();
  os << "checkpoint " << *folder << " (" << rt::kCheckpointFormat << ")\n";
  os << "  step " << p.step << ": " << p.updates << " optimizer updates, " << p.skipped << " steps skipped, "
     << p.samples << " sequences drawn (seed " << p.seed << ")\n";
  const llvm::json::Object &l = c->layout();
  os << "  saved under " << l.getString("mesh").getValueOr("?") << ", ZeRO " << l.getInteger("zero").getValueOr(0)
     << ", " << l.getString("precision").getValueOr("?") << ", " << l.getInteger("virtual_stages").getValueOr(1)
     << " virtual stage(s); " << l.getInteger("micro_batches").getValueOr(1) << " micro-batch(es) of "
     << l.getInteger("batch").getValueOr(0) << " x " << l.getInteger("seq").getValueOr(0) << " tokens on "
     << l.getInteger("dp").getValueOr(1) << " replica(s)\n";
  os << "  data " << c->data().getString("path").getValueOr("?") << " (" << c->data().getInteger("tokens").getValueOr(0)
     << " tokens)\n";
  if (const auto &s = c->lossScaler())
    os << "  loss scale " << s->scale << " (" << s->hysteresisLeft << " overflow(s) of hysteresis left, "
       << s->iteration << " steps counted, last overflow "
       << (s->lastOverflow < 0 ? std::string("none") : std::to_string(s->lastOverflow)) << ")\n";
  uint64_t total = 0;
  std::map<std::string, uint64_t> files = c->files();
  for (const auto &[file, bytes] : files)
    total += bytes;
  os << "  " << files.size() << " shard file(s), " << megabytes(total) << "\n";
  std::map<std::string, std::pair<int64_t, uint64_t>> kinds; // kind -> tensors, bytes
  for (const auto &t : c->tensors()) {
    kinds[t.kind].first += 1;
    kinds[t.kind].second += static_cast<uint64_t>(numElements(t.shape)) * dtypeSize(t.dtype);
  }
  for (const auto &[kind, n] : kinds)
    os << "  " << kind << ": " << n.first << " tensor(s), " << megabytes(n.second) << "\n";
  const size_t shown = all ? c->tensors().size() : std::min<size_t>(c->tensors().size(), 48);
  os << llvm::format("\n  %-40s %-7s %-5s %-16s %6s %12s\n", static_cast<const char *>("tensor"),
                     static_cast<const char *>("kind"), static_cast<const char *>("dtype"),
                     static_cast<const char *>("shape"), static_cast<const char *>("pieces"),
                     static_cast<const char *>("bytes"));
  for (size_t i = 0; i < shown; ++i) {
    const auto &t = c->tensors()[i];
    uint64_t bytes = static_cast<uint64_t>(numElements(t.shape)) * dtypeSize(t.dtype);
    os << llvm::format("  %-40s %-7s %-5s %-16s %6zu %12llu\n", t.name.c_str(), t.kind.c_str(),
                       dtypeName(t.dtype).str().c_str(), shapeString(t.shape).c_str(), t.pieces.size(),
                       static_cast<unsigned long long>(bytes));
  }
  if (shown < c->tensors().size())
    os << "  (" << c->tensors().size() - shown << " more; --all-initializers lists every tensor)\n";
  return 0;
}

} // namespace partita
