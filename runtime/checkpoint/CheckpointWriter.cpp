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
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <map>

namespace partita::rt {

static llvm::Error fail(const llvm::Twine &msg) { return llvm::createStringError(llvm::inconvertibleErrorCode(), msg); }

static std::string rankFile(int rank, const char *ext) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "rank%05d.%s", rank, ext);
  return buf;
}


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
/// when it is empty or carries the marker; the marker goes last, so a kill
/// half-way leaves it for the next try. Anything else in it stays, and so does it.
static llvm::Error removePartial(const std::string &folder) {
  std::error_code ec;
  std::vector<std::string> files;
  bool marked = false;
  for (llvm::sys::fs::directory_iterator it(folder, ec), end; it != end && !ec; it.increment(ec)) {
    llvm::StringRef name = llvm::sys::path::filename(it->path());
    if (name == kPartialMarker)
      marked = true;
    else if (name == kCheckpointIndex || (name.startswith("rank") && (name.endswith(".bin") || name.endswith(".json"))))
      files.push_back(it->path());
    else
      files.push_back(""); // not ours
  }
  if (!files.empty() && !marked)
    return fail(folder + " exists and is no unfinished save of Partita's (no " + kPartialMarker +
                "): remove it yourself");
  for (const std::string &f : files)
    if (!f.empty())
      llvm::sys::fs::remove(f);
  llvm::sys::fs::remove(joinPath(folder, kPartialMarker));
  if (auto rc = llvm::sys::fs::remove(folder))
    return fail(folder + ": an unfinished save holds files Partita did not write; remove it yourself (" +
                rc.message() + ")");
  return llvm::Error::success();
}

llvm::Error CheckpointWriter::writeRankFile() {
  auto bin = DurableFile::create(joinPath(snap_.tmp, rankFile(rank_, "bin")));
  if (!bin)
    return bin.takeError();
  llvm::json::Array pieces;
  for (const Snapshot::Piece &p : snap_.pieces) {
    llvm::ArrayRef<uint8_t> data(snap_.data.data() + p.offset, p.bytes);
    uint64_t offset = bin->offset();
    if (auto err = bin->write(data.data(), data.size()))
      return err;
    pieces.push_back(llvm::json::Object{{"name", p.name},
                                        {"kind", p.kind},
                                        {"dtype", dtypeName(p.dtype)},
                                        {"shape", numbers(p.whole)},
                                        {"outer", numbers(p.box.outer)},
                                        {"start", numbers(p.box.start)},
                                        {"extent", numbers(p.box.extent)},
                                        {"flat", numbers({p.box.flatBegin, p.box.flatEnd})},
                                        {"offset", static_cast<int64_t>(offset)},
                                        {"xxh64", hex64(llvm::xxHash64(data))}});
  }
  if (auto err = bin->close())
    return err;
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::json::Value(std::move(pieces));
  os.flush();
  return writeFileDurably(joinPath(snap_.tmp, rankFile(rank_, "json")), text);
}

llvm::Error CheckpointWriter::writeIndex() {
  const std::string &tmp = snap_.tmp;
  const CheckpointRun &run = snap_.run;
  const Plan &plan = *plan_;
  // The pieces of every rank, by tensor.
  std::map<std::pair<std::string, std::string>, llvm::json::Object> tensors;
  const int64_t ranks = plan.worldSize();
  for (int r = 0; r < ranks; ++r) {
    std::string path = joinPath(tmp, rankFile(r, "json"));
    auto buf = llvm::MemoryBuffer::getFile(path);
    if (!buf)
      return fail("rank " + llvm::Twine(r) + "'s record " + path + " is not there: every rank must see --save " +
                  dir_ + " (a shared file system)");
    auto parsed = llvm::json::parse((*buf)->getBuffer());
    if (!parsed)
      return fail(path + ": " + llvm::toString(parsed.takeError()));
    if (!parsed->getAsArray())
      return fail(path + ": not a list of pieces");
    for (llvm::json::Value &v : *parsed->getAsArray()) {
      llvm::json::Object *o = v.getAsObject();
      if (!o || !o->getString("name") || !o->getString("kind"))
        return fail(path + ": a piece without its name or kind");
      for (const char *key : {"dtype", "shape", "outer", "start", "extent", "flat", "offset", "xxh64"})
        if (!o->get(key))
          return fail(path + ": a piece without its " + key);
      llvm::json::Object &p = *o;
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
  const TrainProgress &pr = snap_.progress;
  llvm::json::Object layout{{"mesh", plan.mesh.str()},
                            {"zero", plan.zero},
                            {"precision", plan.precision},
                            {"virtual_stages", plan.virtualStages},
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
  if (snap_.scaler) {
    const LossScalerState &s = *snap_.scaler;
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
  if (auto err = writeFileDurably(joinPath(tmp, kCheckpointIndex), text))
    return err;
  for (int r = 0; r < ranks; ++r) // joined into the index
    llvm::sys::fs::remove(joinPath(tmp, rankFile(r, "json")));
  return syncFolder(tmp);
}

CheckpointWriter::CheckpointWriter(std::string dir, int keep, Communicator &world, int rank, bool async)
    : dir_(std::move(dir)), keep_(keep), world_(&world), rank_(rank), async_(async) {}

CheckpointWriter::~CheckpointWriter() {
  if (writer_.joinable()) // a run that failed while a save was being written
    writer_.join();
  if (lock_ >= 0)
    ::close(lock_); // releases the lock; the file stays (removing it would race a new holder)
}

llvm::Error CheckpointWriter::lockFolder() {
  std::string path = joinPath(dir_, kSaveLock);
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0)
    return fail(path + ": " + std::strerror(errno));
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    int e = errno;
    ::close(fd);
    return fail("--save " + dir_ + ": another run is saving into it (" + path + " is locked: " + std::strerror(e) +
                "); give each run a folder of its own");
  }
  lock_ = fd;
  return llvm::Error::success();
}

llvm::Error CheckpointWriter::begin(const TrainState &state, const CheckpointRun &run) {
  plan_ = &state.plan();
  snap_.name = checkpointName(state.progress.step);
  snap_.final = joinPath(dir_, snap_.name);
  snap_.tmp = snap_.final + ".partial";
  llvm::Error err = llvm::Error::success();
  if (rank_ == 0) { // reserve() made the folder and holds its lock
    if (llvm::sys::fs::exists(snap_.final))
      err = fail("--save " + dir_ + " already holds " + snap_.name + ": a checkpoint is never replaced");
    else if (llvm::sys::fs::exists(snap_.tmp))
      err = removePartial(snap_.tmp);
    if (!err) {
      if (auto ec = llvm::sys::fs::create_directory(snap_.tmp, /*IgnoreExisting=*/false))
        err = fail(snap_.tmp + ": " + ec.message());
      else
        err = writeFileDurably(joinPath(snap_.tmp, kPartialMarker), "");
    }
  }
  if (auto e = agreeOnErrors(*world_, std::move(err), "start checkpoint " + snap_.name))
    return e;
  // The snapshot: the pieces this rank writes, copied to the host as they are now.
  reserveSnapshot(state);
  size_t k = 0;
  for (const StateTensor &t : state.tensors())
    if (t.writer && t.box.numel() > 0) {
      t.device->copyToHost(snap_.data.data() + snap_.pieces[k].offset, t.view.data, snap_.pieces[k].bytes);
      ++k;
    }
  snap_.progress = state.progress;
  snap_.scaler = state.scaler ? std::optional<LossScalerState>(state.scaler->state()) : std::nullopt;
  snap_.run = run;
  return llvm::Error::success();
}

llvm::Error CheckpointWriter::reserve(const TrainState &state) {
  reserveSnapshot(state);
  llvm::Error err = llvm::Error::success();
  if (rank_ == 0 && lock_ < 0) { // from the start: a second run into the folder stops now
    if (auto ec = llvm::sys::fs::create_directories(dir_))
      err = fail("--save " + dir_ + ": " + ec.message());
    else
      err = lockFolder();
  }
  return agreeOnErrors(*world_, std::move(err), "lock --save " + dir_);
}

void CheckpointWriter::reserveSnapshot(const TrainState &state) {
  snap_.pieces.clear();
  size_t total = 0;
  for (const StateTensor &t : state.tensors())
    if (t.writer && t.box.numel() > 0) {
      size_t bytes = static_cast<size_t>(t.box.numel()) * dtypeSize(t.view.dtype);
      snap_.pieces.push_back({t.name, stateKindName(t.kind), t.view.dtype, t.whole, t.box, total, bytes});
      total += bytes;
    }
  if (snap_.data.size() != total) // touched now: its pages are not faulted in during a step
    snap_.data.assign(total, 0);
}

llvm::Error CheckpointWriter::save(const TrainState &state, const CheckpointRun &run) {
  if (auto err = finish()) // the previous save, in place first
    return err;
  if (auto err = begin(state, run))
    return err;
  if (!async_)
    return complete(writeRankFile());
  written_ = false;
  pending_ = true;
  writer_ = std::thread([this] {
    // Below the ranks' compute threads: the writing takes what they leave
    // (kernel time copying into the page cache, mostly), not their cores.
    ::setpriority(PRIO_PROCESS, static_cast<id_t>(::syscall(SYS_gettid)), 19);
    llvm::Error err = writeRankFile();
    writeError_ = err ? llvm::toString(std::move(err)) : std::string();
    written_ = true;
  });
  return llvm::Error::success();
}

llvm::Error CheckpointWriter::poll() {
  if (!pending_)
    return llvm::Error::success();
  int64_t notYet = written_ ? 0 : 1; // any rank still writing: the next step asks again
  if (auto err = world_->allReduce(&notYet, 1, DType::I64, Communicator::ReduceOp::Max))
    return err;
  return notYet ? llvm::Error::success() : finish();
}

llvm::Error CheckpointWriter::finish() {
  if (!pending_)
    return llvm::Error::success();
  writer_.join();
  pending_ = false;
  return complete(writeError_.empty() ? llvm::Error::success() : fail(writeError_));
}

/// The checkpoint tests (test/train/check_checkpoint.py) kill rank 0 in the
/// middle of a save: PARTITA_TEST_KILL_SAVE=N kills the save of step N with
/// every piece written and no index yet; N:renamed once the folder is in
/// place and before `latest` moves.
void CheckpointWriter::killForTest(llvm::StringRef phase) const {
  const char *kill = std::getenv("PARTITA_TEST_KILL_SAVE");
  if (kill && rank_ == 0 && llvm::StringRef(kill) == std::to_string(snap_.progress.step) + phase.str())
    std::raise(SIGKILL);
}

llvm::Error CheckpointWriter::complete(llvm::Error own) {
  if (auto e = agreeOnErrors(*world_, std::move(own), "write its part of checkpoint " + snap_.name))
    return e;
  killForTest("");
  llvm::Error err = llvm::Error::success();
  if (rank_ == 0) {
    err = writeIndex();
    if (!err) {
      // The marker goes once the folder is in place: an unfinished save
      // keeps it to the end, so the next one may remove it.
      if (auto ec = llvm::sys::fs::rename(snap_.tmp, snap_.final))
        err = fail("cannot rename " + snap_.tmp + " to " + snap_.final + ": " + ec.message());
      else if (llvm::sys::fs::remove(joinPath(snap_.final, kPartialMarker)), !(err = syncFolder(dir_))) {
        killForTest(":renamed");
        // `latest` moves only now, to a checkpoint that is whole on disk.
        std::string next = joinPath(dir_, std::string(kLatestFile) + ".partial");
        llvm::sys::fs::remove(next);
        err = writeFileDurably(next, snap_.name + "\n");
        if (!err) {
          if (auto ec = llvm::sys::fs::rename(next, joinPath(dir_, kLatestFile)))
            err = fail("cannot move " + joinPath(dir_, kLatestFile) + ": " + ec.message());
          else
            err = syncFolder(dir_);
        }
      }
    }
    if (!err) {
      saved_.push_back(snap_.final);
      err = removeOld();
    }
  }
  return agreeOnErrors(*world_, std::move(err), "finish checkpoint " + snap_.name);
}

llvm::Error CheckpointWriter::removeOld() {
  while (keep_ > 0 && static_cast<int>(saved_.size()) > keep_) {
    std::string old = saved_.front();
    saved_.erase(saved_.begin());
    // Only the files a checkpoint has; a folder holding more stays.
    auto buf = llvm::MemoryBuffer::getFile(joinPath(old, kCheckpointIndex));
    if (!buf)
      continue; // gone already, or not ours any more
    auto parsed = llvm::json::parse((*buf)->getBuffer());
    if (!parsed || !parsed->getAsObject() || parsed->getAsObject()->getString("format") != llvm::StringRef(kCheckpointFormat))
      continue;
    int64_t ranks = parsed->getAsObject()->getInteger("ranks").getValueOr(0);
    for (int r = 0; r < ranks; ++r)
      llvm::sys::fs::remove(joinPath(old, rankFile(r, "bin")));
    llvm::sys::fs::remove(joinPath(old, kPartialMarker)); // a save killed before it went
    llvm::sys::fs::remove(joinPath(old, kCheckpointIndex));
    if (auto ec = llvm::sys::fs::remove(old))
      llvm::errs() << "partita: --keep " << keep_ << ": left " << old << ": it holds files Partita did not write\n";
  }
  return llvm::Error::success();
}

} // namespace partita::rt
