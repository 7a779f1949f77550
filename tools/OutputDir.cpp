//===- OutputDir.cpp ------------------------------------------------------===//
#include "tools/OutputDir.h"
#include "compiler/support/OutputFile.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"
#include <algorithm>

namespace fs = llvm::sys::fs;
namespace path = llvm::sys::path;

namespace partita {
namespace {

constexpr const char *kManifestFormat = "partita-output-1";

llvm::Error error(const llvm::Twine &msg) { return llvm::createStringError(llvm::inconvertibleErrorCode(), msg); }

} // namespace

std::string canonicalPath(llvm::StringRef p) {
  llvm::SmallString<256> abs(p);
  fs::make_absolute(abs);
  path::remove_dots(abs, /*remove_dot_dot=*/true);
  while (abs.size() > 1 && path::is_separator(abs.back()))
    abs.pop_back();
  llvm::SmallString<256> real;
  if (!fs::real_path(abs, real))
    return real.str().str();
  return abs.str().str();
}

namespace {

/// `inner` is `outer` or lies below it.
bool within(llvm::StringRef inner, llvm::StringRef outer) {
  if (!inner.startswith(outer))
    return false;
  return inner.size() == outer.size() || outer == "/" || path::is_separator(inner[outer.size()]);
}

/// Every entry below `dir` as a path relative to it; directories end in '/'.
std::vector<std::string> listTree(llvm::StringRef dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec, /*follow_symlinks=*/false), end; it != end && !ec;
       it.increment(ec)) {
    llvm::StringRef rel = llvm::StringRef(it->path()).drop_front(dir.size() + 1);
    bool isDir = it->type() == fs::file_type::directory_file;
    out.push_back(rel.str() + (isDir ? "/" : ""));
  }
  std::sort(out.begin(), out.end());
  return out;
}

} // namespace

llvm::Error checkOutputDir(llvm::StringRef dir, llvm::StringRef kind, llvm::StringRef flag,
                           llvm::ArrayRef<std::string> inputs) {
  if (dir.empty())
    return error(flag + ": empty path");
  std::string target = canonicalPath(dir);
  for (const std::string &in : inputs) {
    if (in.empty())
      continue;
    std::string input = canonicalPath(in);
    if (target == input)
      return error(flag + " " + dir + " is the input " + in + " itself: choose another output folder");
    if (within(target, input))
      return error(flag + " " + dir + " lies inside the input " + in + ": choose another output folder");
    if (within(input, target))
      return error(flag + " " + dir + " contains the input " + in +
                   " (replacing the folder would delete it): choose another output folder");
  }
  fs::file_status st;
  if (fs::status(target, st, /*follow=*/false) || !fs::exists(st))
    return llvm::Error::success();
  if (!fs::is_directory(st))
    return error(flag + " " + dir + " exists and is not a folder: Partita does not replace it");
  std::vector<std::string> entries = listTree(target);
  if (entries.empty())
    return llvm::Error::success();
  std::string manifestPath = target + "/" + kOutputManifest;
  auto buf = llvm::MemoryBuffer::getFile(manifestPath);
  if (!buf)
    return error(flag + " " + dir + " exists and is not a Partita output (it has no " + kOutputManifest +
                 "): Partita does not replace a folder it did not write; choose another folder or empty it");
  auto json = llvm::json::parse((*buf)->getBuffer());
  const llvm::json::Object *root = json ? json->getAsObject() : nullptr;
  if (!json)
    llvm::consumeError(json.takeError());
  if (!root || root->getString("format") != llvm::StringRef(kManifestFormat) || !root->getArray("files"))
    return error(flag + " " + dir + ": " + kOutputManifest + " is not a Partita output manifest (" +
                 kManifestFormat + "): Partita does not replace the folder");
  llvm::StringRef writer = root->getString("kind").getValueOr("");
  if (writer != kind)
    return error(flag + " " + dir + " is the output of 'partita " + writer + "', not of 'partita " + kind +
                 "': Partita does not replace it with another command's output");
  llvm::StringSet<> listed{kOutputManifest};
  for (const auto &f : *root->getArray("files"))
    if (auto s = f.getAsString()) {
      listed.insert(*s);
      for (llvm::StringRef p = *s; !p.empty();) { // its folders too
        p = path::parent_path(p);
        if (!p.empty())
          listed.insert((p + "/").str());
      }
    }
  for (const std::string &e : entries)
    if (!listed.count(e))
      return error(flag + " " + dir + " holds " + e + ", which the earlier output's manifest does not list: " +
                   "Partita does not replace a folder holding files it did not write");
  return llvm::Error::success();
}

llvm::Expected<StagedOutput> StagedOutput::begin(llvm::StringRef dir, llvm::StringRef kind, llvm::StringRef flag,
                                                 llvm::ArrayRef<std::string> inputs) {
  if (auto err = checkOutputDir(dir, kind, flag, inputs))
    return std::move(err);
  StagedOutput s;
  s.target_ = canonicalPath(dir);
  s.kind_ = kind.str();
  s.flag_ = flag.str();
  s.inputs_ = inputs.vec();
  llvm::StringRef parent = path::parent_path(s.target_);
  if (auto ec = fs::create_directories(parent))
    return error("cannot create " + parent + ": " + ec.message());
  llvm::SmallString<256> staging;
  if (auto ec = fs::createUniqueDirectory(s.target_ + ".partial", staging))
    return error("cannot create a staging folder beside " + dir + ": " + ec.message());
  s.staging_ = staging.str().str();
  s.live_ = true;
  return std::move(s);
}

StagedOutput::StagedOutput(StagedOutput &&o) noexcept
    : target_(std::move(o.target_)), kind_(std::move(o.kind_)), flag_(std::move(o.flag_)),
      staging_(std::move(o.staging_)), inputs_(std::move(o.inputs_)), live_(o.live_) {
  o.live_ = false;
}

StagedOutput::~StagedOutput() { discard(); }

void StagedOutput::discard() {
  if (live_)
    fs::remove_directories(staging_);
  live_ = false;
}

llvm::Error StagedOutput::commit() {
  if (!live_)
    return error("internal: output " + target_ + " committed twice");
  if (auto err = checkOutputDir(target_, kind_, flag_, inputs_))
    return err;
  {
    llvm::json::Array files;
    for (const std::string &e : listTree(staging_))
      if (llvm::StringRef(e).back() != '/')
        files.push_back(e);
    llvm::json::Object manifest{{"format", kManifestFormat}, {"kind", kind_}, {"files", std::move(files)}};
    if (auto err = writeFile(staging_ + "/" + kOutputManifest, [&](llvm::raw_ostream &os) {
          os << llvm::formatv("{0:2}", llvm::json::Value(std::move(manifest))) << "\n";
        }))
      return err;
  }
  std::string old;
  if (fs::exists(target_)) {
    if (listTree(target_).empty()) {
      if (auto ec = fs::remove(target_))
        return error("cannot replace the empty folder " + target_ + ": " + ec.message());
    } else {
      llvm::SmallString<256> oldPath;
      if (auto ec = fs::createUniqueDirectory(target_ + ".old", oldPath))
        return error("cannot set the earlier output " + target_ + " aside: " + ec.message());
      old = oldPath.str().str();
      if (auto ec = fs::rename(target_, old)) {
        fs::remove(old);
        return error("cannot set the earlier output " + target_ + " aside: " + ec.message());
      }
    }
  }
  if (auto ec = fs::rename(staging_, target_)) {
    if (!old.empty())
      fs::rename(old, target_);
    return error("cannot move the output into " + target_ + ": " + ec.message());
  }
  live_ = false;
  if (!old.empty())
    fs::remove_directories(old);
  return llvm::Error::success();
}

} // namespace partita
