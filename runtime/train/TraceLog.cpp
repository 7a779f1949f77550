//===- TraceLog.cpp -------------------------------------------------------===//
#include "runtime/train/TraceLog.h"
#include "compiler/support/OutputFile.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

namespace partita::rt {

static llvm::Error fail(const llvm::Twine &msg) { return llvm::createStringError(llvm::inconvertibleErrorCode(), msg); }

static std::string partPath(llvm::StringRef partsDir, int rank) {
  llvm::SmallString<256> p(partsDir);
  llvm::sys::path::append(p, "rank" + llvm::Twine(rank) + ".json");
  return p.str().str();
}

std::string tracePartsDir(llvm::StringRef stagingDir) {
  llvm::SmallString<256> p(stagingDir);
  llvm::sys::path::append(p, "trace-parts");
  return p.str().str();
}

void TraceLog::slice(llvm::StringRef name, int64_t micro, llvm::StringRef cat, Clock::time_point start,
                     Clock::time_point end) {
  if (!on_)
    return;
  auto us = [](Clock::time_point t) {
    return std::chrono::duration<double, std::micro>(t.time_since_epoch()).count();
  };
  slices_.push_back({micro >= 0 ? (name + " " + llvm::Twine(micro)).str() : name.str(), cat.str(), us(start),
                     us(end) - us(start)});
}

void TraceLog::collective(llvm::StringRef name, Clock::time_point start, Clock::time_point end) {
  slice(name, -1, "collective", start, end);
  if (on_)
    slices_.back().collective = true;
}

llvm::Error TraceLog::writePart(llvm::StringRef partsDir, int rank, llvm::StringRef track) const {
  llvm::json::Array events;
  events.push_back(llvm::json::Object{{"name", "thread_name"}, {"ph", "M"}, {"pid", 0}, {"tid", rank},
                                      {"args", llvm::json::Object{{"name", track}}}});
  if (llvm::any_of(slices_, [](const Slice &s) { return s.collective; }))
    events.push_back(llvm::json::Object{{"name", "thread_name"}, {"ph", "M"}, {"pid", 0},
                                        {"tid", kCollectiveTrack + rank},
                                        {"args", llvm::json::Object{{"name", (track + " collectives").str()}}}});
  for (const Slice &s : slices_)
    events.push_back(llvm::json::Object{{"name", s.name}, {"cat", s.cat}, {"ph", "X"}, {"pid", 0},
                                        {"tid", s.collective ? kCollectiveTrack + rank : rank}, {"ts", s.startUs},
                                        {"dur", s.durUs}});
  if (auto ec = llvm::sys::fs::create_directories(partsDir))
    return fail("cannot create " + partsDir + ": " + ec.message());
  return writeFile(partPath(partsDir, rank),
                   [&](llvm::raw_ostream &os) { os << llvm::json::Value(std::move(events)); });
}

llvm::Error joinTrace(llvm::StringRef partsDir, int ranks, llvm::StringRef file) {
  llvm::json::Array all;
  for (int r = 0; r < ranks; ++r) {
    auto buf = llvm::MemoryBuffer::getFile(partPath(partsDir, r));
    if (!buf)
      return fail("cannot read " + partPath(partsDir, r) + ": " + buf.getError().message());
    auto part = llvm::json::parse((*buf)->getBuffer());
    if (!part)
      return part.takeError();
    if (auto *events = part->getAsArray())
      for (llvm::json::Value &e : *events)
        all.push_back(std::move(e));
  }
  llvm::json::Value trace(llvm::json::Object{{"traceEvents", std::move(all)}, {"displayTimeUnit", "ms"}});
  if (auto err = writeFile(file, [&](llvm::raw_ostream &os) { os << trace; }, OutputFile::Mode::NoReplace))
    return err;
  if (auto ec = llvm::sys::fs::remove_directories(partsDir))
    return fail("cannot remove " + partsDir + ": " + ec.message());
  return llvm::Error::success();
}

} // namespace partita::rt
