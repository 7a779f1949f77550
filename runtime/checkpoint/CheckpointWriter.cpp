//===- CheckpointWriter.cpp - saving the training state -------------------===//
//
// Every rank writes its pieces and a record of them into the checkpoint's
// .partial folder; rank 0 joins the records into the index, flushes it,
// renames the folder into place and moves `latest`. The ranks agree after
// each phase (agreeOnErrors), so a rank that cannot write fails the save on
// every rank at the same point, with its own error.
//===----------------------------------------------------------------------===//
#include "runtime/checkpoint/Checkpoint.h"
#include "runtime/checkpoint/CheckpointFiles.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Support/xxhash.h"
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <map>

namespace partita::rt {

static llvm::Error fail(const llvm::Twine &msg) { return llvm::createStringError(llvm::inconvertibleErrorCode(), msg); }

static std::string join(llvm::StringRef a, llvm::StringRef b) {
  llvm::SmallString<256> p(a);
  llvm::sys::path::append(p, b);
  return std::string(p);
}

static std::string rankFile(int rank, const char *ext) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "rank%05d.%s", rank, ext);
  return buf;
}

/// Marks a .partial folder as this code's: only such a folder is ever removed.
static constexpr const char *kPartialMarker = ".partita-checkpoint-partial";

static llvm::json::Array numbers(llvm::ArrayRef<int64_t> v) {
  llvm::json::Array a;
  for (int64_t x : v)
    a.push_back(x);
  return a;
}

static std::string hex64(uint64_t h) {
  char buf[20];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

/// Removes `folder`, a .partial folder of an earlier save that did not finish,
/// when it carries the marker; anything else in it stays, and so does it.
static llvm::Error removePartial(const std::string &folder) {
  if (!llvm::sys::fs::exists(join(folder, kPartialMarker)))
    return fail(folder + " exists and is no unfinished save of Partita's (no " + kPartialMarker +
                "): remove it yourself");
  std::error_code ec;
  std::vector<std::string> files;
  for (llvm::sys::fs::directory_iterator it(folder, ec), end; it != end && !ec; it.increment(ec)) {
    llvm::StringRef name = llvm::sys::path::filename(it->path());
    if (name == kPartialMarker || name == kCheckpointIndex ||
        (name.startswith("rank") && (name.endswith(".bin") || name.endswith(".json"))))
      files.push_back(it->path());
  }
  for (const std::string &f : files)
    llvm::sys::fs::remove(f);
  if (auto rc = llvm::sys::fs::remove(folder))
    return fail(folder + ": an unfinished save holds files Partita did not write; remove it yourself (" +
                rc.message() + ")");
  return llvm::Error::success();
}

llvm::Error CheckpointWriter::writeRankFile(const TrainState &state, llvm::StringRef tmp) {
  auto bin = DurableFile::create(join(tmp, rankFile(rank_, "bin")));
  if (!bin)
    return bin.takeError();
  llvm::json::Array pieces;
  for (const StateTensor &t : state.tensors()) {
    if (!t.writer || t.box.numel() == 0)
      continue;
    // The CPU device's buffers are host memory; a device's would be copied
    // to the host here first.
    size_t bytes = static_cast<size_t>(t.box.numel()) * dtypeSize(t.view.dtype);
    llvm::ArrayRef<uint8_t> data(static_cast<const uint8_t *>(t.view.data), bytes);
    uint64_t offset = bin->offset();
    if (auto err = bin->write(data.data(), data.size()))
      return err;
    pieces.push_back(llvm::json::Object{{"name", t.name},
                                        {"kind", stateKindName(t.kind)},
                                        {"dtype", dtypeName(t.view.dtype)},
                                        {"shape", numbers(t.whole)},
                                        {"outer", numbers(t.box.outer)},
                                        {"start", numbers(t.box.start)},
                                        {"extent", numbers(t.box.extent)},
                                        {"flat", numbers({t.box.flatBegin, t.box.flatEnd})},
                                        {"offset", static_cast<int64_t>(offset)},
                                        {"xxh64", hex64(llvm::xxHash64(data))}});
  }
  if (auto err = bin->close())
    return err;
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::json::Value(std::move(pieces));
  os.flush();
  return writeFileDurably(join(tmp, rankFile(rank_, "json")), text);
}

llvm::Error CheckpointWriter::writeIndex(const TrainState &state, const CheckpointRun &run, llvm::StringRef tmp) {
  // The pieces of every rank, by tensor.
  std::map<std::pair<std::string, std::string>, llvm::json::Object> tensors;
  const int64_t ranks = state.plan().worldSize();
  for (int r = 0; r < ranks; ++r) {
    std::string path = join(tmp, rankFile(r, "json"));
    auto buf = llvm::MemoryBuffer::getFile(path);
    if (!buf)
      return fail("rank " + llvm::Twine(r) + "'s record " + path + " is not there: every rank must see --save " +
                  dir_ + " (a shared file system)");
    auto parsed = llvm::json::parse((*buf)->getBuffer());
    if (!parsed)
      return fail(path + ": " + llvm::toString(parsed.takeError()));
    for (llvm::json::Value &v : *parsed->getAsArray()) {
      llvm::json::Object &p = *v.getAsObject();
      std::string name = p.getString("name")->str(), kind = p.getString("kind")->str();
      auto [it, first] = tensors.try_emplace({name, kind});
      if (first) {
        it->second["name"] = name;
        it->second["kind"] = kind;
        it->second["dtype"] = *p.get("dtype");
        it->second["shape"] = *p.get("shape");
        it->second["pieces"] = llvm::json::Array();
      }
      llvm::json::Object piece{{"file", rankFile(r, "bin")}};
      for (const char *key : {"outer", "start", "extent", "flat", "offset", "xxh64"})
        piece[key] = *p.get(key);
      it->second.getArray("pieces")->push_back(std::move(piece));
    }
  }
  const TrainProgress &pr = state.progress;
  llvm::json::Object layout{{"mesh", state.plan().mesh.str()},
                            {"zero", state.plan().zero},
                            {"precision", state.plan().precision},
                            {"virtual_stages", state.plan().virtualStages},
                            {"batch", run.batch},
                            {"seq", run.seq},
                            {"micro_batches", run.microBatches},
                            {"dp", run.dpSize}};
  llvm::json::Object index{{"format", kCheckpointFormat},
                           {"ranks", ranks},
                           {"step", pr.step},
                           {"updates", pr.updates},
                           {"skipped", pr.skipped},
                           {"samples", pr.samples},
                           {"seed", pr.seed},
                           {"layout", std::move(layout)},
                           {"data", llvm::json::Object{{"path", run.data}, {"tokens", run.tokens}}}};
  if (state.scaler) {
    LossScalerState s = state.scaler->state();
    index["loss_scaler"] = llvm::json::Object{{"scale", s.scale},
                                              {"hysteresis_left", s.hysteresisLeft},
                                              {"iteration", s.iteration},
                                              {"last_overflow", s.lastOverflow}};
  }
  llvm::json::Array list;
  for (auto &[key, t] : tensors)
    list.push_back(std::move(t));
  index["tensors"] = std::move(list);
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::json::Value(std::move(index)) << "\n";
  os.flush();
  if (auto err = writeFileDurably(join(tmp, kCheckpointIndex), text))
    return err;
  for (int r = 0; r < ranks; ++r) // joined into the index
    llvm::sys::fs::remove(join(tmp, rankFile(r, "json")));
  return syncFolder(std::string(tmp));
}

llvm::Error CheckpointWriter::save(const TrainState &state, const CheckpointRun &run) {
  const std::string name = checkpointName(state.progress.step), final = join(dir_, name),
                    tmp = final + ".partial";
  llvm::Error err = llvm::Error::success();
  if (rank_ == 0) {
    if (auto ec = llvm::sys::fs::create_directories(dir_))
      err = fail("--save " + dir_ + ": " + ec.message());
    else if (llvm::sys::fs::exists(final))
      err = fail("--save " + dir_ + " already holds " + name + ": a checkpoint is never replaced");
    else if (llvm::sys::fs::exists(tmp))
      err = removePartial(tmp);
    if (!err) {
      if (auto ec = llvm::sys::fs::create_directory(tmp, /*IgnoreExisting=*/false))
        err = fail(tmp + ": " + ec.message());
      else
        err = writeFileDurably(join(tmp, kPartialMarker), "");
    }
  }
  if (auto e = agreeOnErrors(*world_, std::move(err), "start checkpoint " + name))
    return e;
  if (auto e = agreeOnErrors(*world_, writeRankFile(state, tmp), "write its part of checkpoint " + name))
    return e;
  // The checkpoint tests kill a save here, every piece written and no index
  // yet (test/train/check_checkpoint.py): the previous checkpoint must stay.
  if (const char *kill = std::getenv("PARTITA_TEST_KILL_SAVE"); kill && rank_ == 0 &&
                                                                 std::atoll(kill) == state.progress.step)
    std::raise(SIGKILL);
  err = llvm::Error::success();
  if (rank_ == 0) {
    err = writeIndex(state, run, tmp);
    if (!err) {
      // The marker goes once the folder is in place: an unfinished save
      // keeps it to the end, so the next one may remove it.
      if (auto ec = llvm::sys::fs::rename(tmp, final))
        err = fail("cannot rename " + tmp + " to " + final + ": " + ec.message());
      else if (llvm::sys::fs::remove(join(final, kPartialMarker)), !(err = syncFolder(dir_))) {
        // `latest` moves only now, to a checkpoint that is whole on disk.
        std::string next = join(dir_, std::string(kLatestFile) + ".partial");
        llvm::sys::fs::remove(next);
        err = writeFileDurably(next, name + "\n");
        if (!err) {
          if (auto ec = llvm::sys::fs::rename(next, join(dir_, kLatestFile)))
            err = fail("cannot move " + join(dir_, kLatestFile) + ": " + ec.message());
          else
            err = syncFolder(dir_);
        }
      }
    }
    if (!err) {
      written_.push_back(final);
      err = removeOld();
    }
  }
  return agreeOnErrors(*world_, std::move(err), "finish checkpoint " + name);
}

llvm::Error CheckpointWriter::removeOld() {
  while (keep_ > 0 && static_cast<int>(written_.size()) > keep_) {
    std::string old = written_.front();
    written_.erase(written_.begin());
    // Only the files a checkpoint has; a folder holding more stays.
    auto buf = llvm::MemoryBuffer::getFile(join(old, kCheckpointIndex));
    if (!buf)
      continue; // gone already, or not ours any more
    auto parsed = llvm::json::parse((*buf)->getBuffer());
    if (!parsed || !parsed->getAsObject() || parsed->getAsObject()->getString("format") != llvm::StringRef(kCheckpointFormat))
      continue;
    int64_t ranks = parsed->getAsObject()->getInteger("ranks").getValueOr(0);
    for (int r = 0; r < ranks; ++r)
      llvm::sys::fs::remove(join(old, rankFile(r, "bin")));
    llvm::sys::fs::remove(join(old, kCheckpointIndex));
    if (auto ec = llvm::sys::fs::remove(old))
      llvm::errs() << "partita: --keep " << keep_ << ": left " << old << ": it holds files Partita did not write\n";
  }
  return llvm::Error::success();
}

} // namespace partita::rt
