//===- Watchdog.h - deadlines and arrival tracking for MPI waits ----------===//
//
// Every collective and receive of an MpiCommunicator ends in Watchdog::wait:
// it polls the MPI request, sleeps between polls while it has nothing to move
// (so a waiting rank does not burn a core), and once the deadline passes it
// returns an error that names the ranks of the group that never arrived.
//
// Arrivals live in a table the ranks of a node share (MPI_Win_allocate_shared).
// A rank's slot holds, per group, how many collectives it has entered; the last
// time it called into the communicator (a heartbeat); and what it waits in.
// Why a shared table and not messages or a heartbeat thread: a stopped or hung
// rank cannot answer a message, but its last stores stay readable; entering a
// collective costs one store and no message; and the waiter can tell "a member
// is not here yet" (sleep) from "everyone is here, data is moving" (keep
// polling: MPI moves data only inside MPI calls, so sleeping then would cost
// bandwidth). Ranks on other nodes have no slot here: their collectives still
// time out, but the message cannot say whether they arrived.
//
// Internal to runtime/comm: only MpiCommunicator.cpp includes it.
//===----------------------------------------------------------------------===//
#pragma once
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"
#include <algorithm>
#include <atomic>
#include <ctime>
#include <memory>
#include <mpi.h>
#include <new>
#include <string>
#include <vector>

namespace partita::rt {

enum class CommOp : int32_t { None, AllReduce, AllGather, ReduceScatter, Broadcast, Barrier, Send, Recv, Split };

inline const char *commOpName(CommOp op) {
  switch (op) {
  case CommOp::None: return "nothing";
  case CommOp::AllReduce: return "all-reduce";
  case CommOp::AllGather: return "all-gather";
  case CommOp::ReduceScatter: return "reduce-scatter";
  case CommOp::Broadcast: return "broadcast";
  case CommOp::Barrier: return "barrier";
  case CommOp::Send: return "send";
  case CommOp::Recv: return "receive";
  case CommOp::Split: return "split";
  }
  return "?";
}

/// One wait: the operation, its group, its sequence number in the group (0 for
/// point-to-point) and the world ranks it waits for.
struct WaitFor {
  CommOp op;
  int group;
  int64_t seq;
  llvm::ArrayRef<int> members; // world ranks; the peer for send/recv
  int peerTag = 0;
};

class Watchdog {
public:
  static constexpr int kMaxGroups = 16;
  /// Collective over MPI_COMM_WORLD. timeoutSeconds <= 0: no deadline.
  static std::shared_ptr<Watchdog> create(double timeoutSeconds) {
    auto w = std::shared_ptr<Watchdog>(new Watchdog);
    w->timeoutNs_ = timeoutSeconds > 0 ? static_cast<int64_t>(timeoutSeconds * 1e9) : 0;
    w->timeoutSeconds_ = timeoutSeconds;
    MPI_Comm_rank(MPI_COMM_WORLD, &w->worldRank_);
    int worldSize = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &worldSize);
    w->slots_.assign(worldSize, nullptr);
    // A failure here leaves the table empty: waits still have deadlines.
    if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, w->worldRank_, MPI_INFO_NULL, &w->node_) !=
        MPI_SUCCESS)
      return w;
    void *base = nullptr;
    if (MPI_Win_allocate_shared(sizeof(Slot), sizeof(Slot), MPI_INFO_NULL, w->node_, &base, &w->win_) !=
        MPI_SUCCESS) {
      w->win_ = MPI_WIN_NULL;
      return w;
    }
    new (base) Slot(); // each rank initialises its own slot, then all may read all
    MPI_Barrier(w->node_);
    int nodeSize = 1;
    MPI_Comm_size(w->node_, &nodeSize);
    MPI_Group nodeGroup, worldGroup;
    MPI_Comm_group(w->node_, &nodeGroup);
    MPI_Comm_group(MPI_COMM_WORLD, &worldGroup);
    for (int r = 0; r < nodeSize; ++r) {
      MPI_Aint bytes = 0;
      int unit = 0;
      void *p = nullptr;
      MPI_Win_shared_query(w->win_, r, &bytes, &unit, &p);
      int world = MPI_UNDEFINED;
      MPI_Group_translate_ranks(nodeGroup, 1, &r, worldGroup, &world);
      if (world != MPI_UNDEFINED && p)
        w->slots_[world] = static_cast<Slot *>(p);
    }
    MPI_Group_free(&nodeGroup);
    MPI_Group_free(&worldGroup);
    return w;
  }

  // The window and its communicator are left to MPI_Finalize: MPI_Win_free
  // waits for every rank, and a destructor run while an error unwinds one
  // rank (on its way to MPI_Abort) must not wait for the others.
  ~Watchdog() = default;

  double timeoutSeconds() const { return timeoutSeconds_; }

  /// Groups are numbered in the order they are made, which MPI makes the same
  /// on every rank (splitting is collective); so a number means the same group
  /// in every rank's slot.
  int addGroup(std::string name) {
    names_.push_back(std::move(name));
    return static_cast<int>(names_.size() - 1);
  }

  /// This rank enters the next collective of `group`: returns its number.
  int64_t arrive(int group) {
    int64_t seq = ++entered_[group < kMaxGroups ? group : kMaxGroups];
    if (Slot *me = mine()) {
      if (group < kMaxGroups)
        me->entered[group].store(seq, std::memory_order_release);
      me->heartbeat.store(nowNs(), std::memory_order_relaxed);
    }
    return seq;
  }

  void heartbeat() {
    if (Slot *me = mine())
      me->heartbeat.store(nowNs(), std::memory_order_relaxed);
  }

  /// Polls `request` (an MPI_Request) to completion or the deadline.
  llvm::Error wait(MPI_Request &request, const WaitFor &w) {
    int64_t start = nowNs();
    Slot *me = mine();
    if (me) {
      me->waitGroup.store(w.group, std::memory_order_relaxed);
      me->waitSeq.store(w.seq, std::memory_order_relaxed);
      me->waitSince.store(start, std::memory_order_relaxed);
      me->waitOp.store(static_cast<int32_t>(w.op), std::memory_order_release);
    }
    int64_t lastPoll = start;
    for (;;) {
      int done = 0;
      int rc = MPI_Test(&request, &done, MPI_STATUS_IGNORE);
      if (rc != MPI_SUCCESS || done) {
        if (me)
          me->waitOp.store(static_cast<int32_t>(CommOp::None), std::memory_order_release);
        if (rc == MPI_SUCCESS)
          return llvm::Error::success();
        char msg[MPI_MAX_ERROR_STRING];
        int len = 0;
        MPI_Error_string(rc, msg, &len);
        return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                       std::string("MPI_Test of ") + commOpName(w.op) + " failed: " + msg);
      }
      int64_t now = nowNs();
      if (me)
        me->heartbeat.store(now, std::memory_order_relaxed);
      // A gap between two polls far above the longest sleep: this rank was
      // stopped (or starved) itself; that time is not the others' lateness.
      if (now - lastPoll > kStoppedNs)
        start += now - lastPoll;
      lastPoll = now;
      int64_t waited = now - start;
      if (timeoutNs_ > 0 && waited > timeoutNs_) {
        // The request stays pending: the caller must abort the rank, as it
        // does for any error (the buffers belong to MPI until then).
        return llvm::createStringError(llvm::inconvertibleErrorCode(), diagnose(w, waited, now));
      }
      if (waited < kSpinNs || othersBusy(w, now))
        continue;
      int64_t sleepNs = std::clamp(waited / 8, kMinSleepNs, kMaxSleepNs);
      timespec ts{0, static_cast<long>(sleepNs)};
      nanosleep(&ts, nullptr);
    }
  }

private:
  /// A rank's slot: written by that rank only, read by the others. Each field
  /// is its own atomic: readers want recent values, not a consistent snapshot.
  struct alignas(64) Slot {
    std::atomic<int64_t> heartbeat{0}; // steady clock, ns: the last call into the communicator
    std::atomic<int32_t> waitOp{0};    // CommOp it waits in; None while computing
    std::atomic<int32_t> waitGroup{0};
    std::atomic<int64_t> waitSeq{0};
    std::atomic<int64_t> waitSince{0};
    std::atomic<int64_t> entered[kMaxGroups] = {}; // collectives entered, per group
  };
  static_assert(std::atomic<int64_t>::is_always_lock_free, "slots are shared between processes");

  // Members usually arrive within microseconds: poll that long before
  // sleeping. Then each sleep is 1/8 of the time waited so far, from 10 us up
  // to 1 ms: a late member is noticed at most ~1/8 of its lateness (and 1 ms)
  // after it arrives, and a long wait costs 1000 wakeups a second.
  static constexpr int64_t kSpinNs = 50'000, kMinSleepNs = 10'000, kMaxSleepNs = 1'000'000;
  // A member that polled this recently is taking part in moving the data.
  static constexpr int64_t kActiveNs = 5'000'000;
  static constexpr int64_t kStoppedNs = 200'000'000;

  Watchdog() = default;

  static int64_t nowNs() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts); // one clock for every process of the node
    return int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
  }

  Slot *mine() const { return slots_.empty() ? nullptr : slots_[worldRank_]; }
  Slot *slotOf(int world) const {
    return world >= 0 && world < static_cast<int>(slots_.size()) ? slots_[world] : nullptr;
  }
  bool tracked(const WaitFor &w) const { return w.seq > 0 && w.group < kMaxGroups; }

  /// True while every member has arrived and polled lately: the data is
  /// moving, keep polling. False when one is missing or silent: sleep.
  bool othersBusy(const WaitFor &w, int64_t now) const {
    for (int m : w.members) {
      if (m == worldRank_)
        continue;
      const Slot *s = slotOf(m);
      if (!s)
        return true; // another node: no way to know, poll as MPI_Wait would
      if (tracked(w) && s->entered[w.group].load(std::memory_order_acquire) < w.seq)
        return false;
      if (!tracked(w) && s->waitOp.load(std::memory_order_acquire) == static_cast<int32_t>(CommOp::None))
        return false;
      if (now - s->heartbeat.load(std::memory_order_relaxed) > kActiveNs)
        return false;
    }
    return true;
  }

  std::string groupName(int g) const {
    return g >= 0 && g < static_cast<int>(names_.size()) ? "'" + names_[g] + "'" : "#" + std::to_string(g);
  }

  static std::string seconds(int64_t ns) {
    std::string s;
    llvm::raw_string_ostream(s) << llvm::format("%.1f s", double(ns) / 1e9);
    return s;
  }

  /// What a member is doing, read from its slot.
  std::string stateOf(int m, int64_t now) const {
    const Slot *s = slotOf(m);
    if (!s)
      return "on another node, not watched from here";
    int64_t quiet = now - s->heartbeat.load(std::memory_order_relaxed);
    auto op = static_cast<CommOp>(s->waitOp.load(std::memory_order_acquire));
    if (op == CommOp::None)
      return "its last call into the communicator was " + seconds(quiet) + " ago: stopped, hung or still computing";
    std::string what = std::string(commOpName(op));
    if (int64_t seq = s->waitSeq.load(std::memory_order_relaxed))
      what += " #" + std::to_string(seq);
    what += " of group " + groupName(s->waitGroup.load(std::memory_order_relaxed));
    if (quiet > kActiveNs * 20)
      return "it entered " + what + " but has not polled for " + seconds(quiet) + ": stopped?";
    return "it has been waiting in " + what + " for " + seconds(now - s->waitSince.load(std::memory_order_relaxed));
  }

  std::string diagnose(const WaitFor &w, int64_t waited, int64_t now) const {
    std::string msg;
    llvm::raw_string_ostream os(msg);
    os << "watchdog: " << commOpName(w.op);
    if (w.op == CommOp::Send || w.op == CommOp::Recv)
      os << (w.op == CommOp::Send ? " to" : " from") << " rank " << (w.members.empty() ? -1 : w.members[0])
         << " (tag " << w.peerTag << ")";
    else if (w.seq > 0)
      os << " #" << w.seq;
    os << " of group " << groupName(w.group);
    if (w.op != CommOp::Send && w.op != CommOp::Recv) {
      os << " (ranks ";
      llvm::interleave(w.members, os, ",");
      os << ")";
    }
    os << " did not complete in " << seconds(waited) << " (timeout "
       << llvm::format("%g", timeoutSeconds_) << " s)";
    std::vector<std::string> missing, silent;
    for (int m : w.members) {
      if (m == worldRank_)
        continue;
      const Slot *s = slotOf(m);
      std::string line = "rank " + std::to_string(m) + " (" + stateOf(m, now) + ")";
      if (!s || !tracked(w))
        missing.push_back(line);
      else if (s->entered[w.group].load(std::memory_order_acquire) < w.seq)
        missing.push_back(line);
      else if (now - s->heartbeat.load(std::memory_order_relaxed) > kActiveNs)
        silent.push_back(line);
    }
    if (!missing.empty()) {
      os << (tracked(w) ? "; not arrived: " : "; waiting for: ");
      llvm::interleave(missing, os, "; ");
    } else if (!silent.empty()) {
      os << "; every rank arrived, then went silent: ";
      llvm::interleave(silent, os, "; ");
    } else {
      os << "; every rank arrived and is polling: MPI itself is stuck";
    }
    return os.str();
  }

  int64_t timeoutNs_ = 0;
  double timeoutSeconds_ = 0;
  int worldRank_ = 0;
  MPI_Comm node_ = MPI_COMM_NULL;
  MPI_Win win_ = MPI_WIN_NULL;
  std::vector<Slot *> slots_; // by world rank; null for ranks on other nodes
  std::vector<std::string> names_;
  int64_t entered_[kMaxGroups + 1] = {};
};

} // namespace partita::rt
