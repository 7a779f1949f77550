//===- Watchdog.h - deadlines and arrival tracking for MPI waits ----------===//
//
// Every wait of an MpiCommunicator has a deadline. A collective first waits
// on the arrival table below until every member has entered it (sleeping, so a
// waiting rank does not burn a core; after the deadline: an error naming the
// members that never arrived), then makes the blocking MPI call, which now
// only moves data: blocking collectives use MPI's tuned algorithms, measured
// up to ~2x faster here than the non-blocking ones at 16 KB - 4 MB. A backstop
// thread ends the rank if that call outlasts the deadline (a member stopped
// mid-transfer). Receives, sends and started all-reduces end in wait(): MPI_Test
// polls, sleeping while the peer is absent or silent.
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
// Internal to runtime/comm: only MpiCommunicator.cpp (and its test) include it.
//===----------------------------------------------------------------------===//
#pragma once
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <pthread.h>
#include <ctime>
#include <memory>
#include <mpi.h>
#include <new>
#include <mutex>
#include <string>
#include <thread>
#include <unistd.h>
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
    // alignof(Slot) more bytes: the window's alignment is MPI's choice (8 bytes in Open MPI).
    if (MPI_Win_allocate_shared(sizeof(Slot) + alignof(Slot), sizeof(Slot), MPI_INFO_NULL, w->node_, &base, &w->win_) !=
        MPI_SUCCESS) {
      w->win_ = MPI_WIN_NULL;
      return w;
    }
    new (alignSlot(base)) Slot(); // each rank initialises its own slot, then all may read all
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
        w->slots_[world] = alignSlot(p);
    }
    MPI_Group_free(&nodeGroup);
    MPI_Group_free(&worldGroup);
    return w;
  }

  // The window and its communicator are left to MPI_Finalize: MPI_Win_free
  // waits for every rank, and a destructor run while an error unwinds one
  // rank (on its way to MPI_Abort) must not wait for the others.
  // The backstop thread reads this object: stop it first (it wakes every 10 ms).
  ~Watchdog() {
    stopping_.store(true, std::memory_order_release);
    if (backstop_.joinable())
      backstop_.join();
    if (paused() == this)
      paused() = nullptr;
  }

  double timeoutSeconds() const { return timeoutSeconds_; }

  /// Groups are numbered in the order they are made, which MPI makes the same
  /// on every rank (splitting is collective); so a number means the same group
  /// in every rank's slot.
  int addGroup(std::string name) {
    std::lock_guard<std::mutex> lock(namesMutex_);
    names_.push_back(std::move(name));
    return static_cast<int>(names_.size() - 1);
  }

  /// What the backstop does when a blocking call outlasts the deadline: given
  /// the message, it must end the process (default: print it, _exit(1)).
  using TimeoutHandler = void (*)(const char *message);
  static void setTimeoutHandler(TimeoutHandler h) { handler() = h; }

  /// Sleeps until every member has entered collective `w.seq` of its group
  /// and is alive (as the table says), or the deadline: then an error naming
  /// the absent. Without a table (ranks on several nodes) it returns at once.
  llvm::Error awaitArrivals(const WaitFor &w) {
    Slot *me = mine();
    if (expired_.load(std::memory_order_relaxed))
      return afterExpiry(w);
    if (!me || !tracked(w))
      return llvm::Error::success();
    int64_t start = nowNs(), lastPoll = start;
    setWaiting(me, w, start);
    for (;;) {
      int64_t now = nowNs();
      me->heartbeat.store(now, std::memory_order_relaxed);
      bool all = true;
      for (int m : w.members)
        if (m != worldRank_)
          if (const Slot *s = slotOf(m); s && !ready(*s, w, now))
            all = false;
      if (all)
        return llvm::Error::success(); // waitOp stays set through the blocking call
      if (now - lastPoll > kStoppedNs) // this rank was stopped itself: not the others' lateness
        start += now - lastPoll;
      lastPoll = now;
      int64_t waited = now - start;
      if (timeoutNs_ > 0 && waited > timeoutNs_)
        return expire(w, waited, now);
      // This rank's started sends (a pipeline's activations, sent by
      // rendezvous) move only while it calls into MPI; a member may be waiting
      // for one before it comes here, and its wait for that member would then
      // never end (a cycle through two stages' dp groups did, in CI).
      driveProgress();
      if (waited < kSpinNs)
        continue;
      timespec ts{0, static_cast<long>(std::clamp(waited / 8, kMinSleepNs, kMaxSleepNs))};
      nanosleep(&ts, nullptr);
    }
  }

  /// One pass of MPI's progress engine (every communicator's pending
  /// operations): a probe that matches nothing it takes.
  void driveProgress() const {
    int flag = 0;
    MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, node_ != MPI_COMM_NULL ? node_ : MPI_COMM_WORLD, &flag,
               MPI_STATUS_IGNORE);
  }

  /// Brackets the blocking MPI call of a collective every member has entered:
  /// the backstop thread ends the process if it does not return in time.
  void beginBlocking(const WaitFor &w) {
    // Marked without a deadline too: the members still waiting to enter count
    // on this rank being inside the call, not on its heartbeat.
    if (Slot *me = mine())
      me->inMpi.store(1, std::memory_order_release);
    if (timeoutNs_ <= 0)
      return;
    std::call_once(backstopStarted_, [this] { startBackstop(); });
    blockedThread_.store(pthread_self(), std::memory_order_relaxed);
    blockedOp_.store(static_cast<int32_t>(w.op), std::memory_order_relaxed);
    blockedGroup_.store(w.group, std::memory_order_relaxed);
    blockedSeq_.store(w.seq, std::memory_order_relaxed);
    blockedMembers_.store(w.members.data(), std::memory_order_relaxed);
    blockedCount_.store(w.members.size(), std::memory_order_relaxed);
    blockedGen_.fetch_add(1, std::memory_order_release); // odd: inside a blocking call
  }
  void endBlocking(const WaitFor &w) {
    if (Slot *me = mine()) {
      leave(w);
      me->inMpi.store(0, std::memory_order_relaxed);
      me->waitOp.store(static_cast<int32_t>(CommOp::None), std::memory_order_release);
    }
    if (timeoutNs_ > 0)
      blockedGen_.fetch_add(1, std::memory_order_release); // even: out of it
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

  /// This rank has returned from collective `w.seq`: a member still waiting
  /// to enter it must not wait for this rank's next sign of life (a root whose
  /// broadcast is done may compute, or end its run, before the others enter).
  void leave(const WaitFor &w) {
    Slot *me = mine();
    if (me && tracked(w) && me->left[w.group].load(std::memory_order_relaxed) < w.seq)
      me->left[w.group].store(w.seq, std::memory_order_release);
  }

  void heartbeat() {
    if (Slot *me = mine())
      me->heartbeat.store(nowNs(), std::memory_order_relaxed);
  }

  /// Polls `request` (an MPI_Request) to completion or the deadline.
  llvm::Error wait(MPI_Request &request, const WaitFor &w) {
    if (expired_.load(std::memory_order_relaxed))
      return afterExpiry(w);
    int64_t start = nowNs();
    Slot *me = mine();
    if (me)
      setWaiting(me, w, start);
    int64_t lastPoll = start;
    for (;;) {
      int done = 0;
      int rc = MPI_Test(&request, &done, MPI_STATUS_IGNORE);
      if (rc != MPI_SUCCESS || done) {
        if (me) {
          if (done)
            leave(w);
          me->waitOp.store(static_cast<int32_t>(CommOp::None), std::memory_order_release);
        }
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
        return expire(w, waited, now);
      }
      if (waited < kSpinNs || othersBusy(w, now))
        continue;
      int64_t sleepNs = std::clamp(waited / 8, kMinSleepNs, kMaxSleepNs);
      // A receive from a peer that is computing (it polled lately, between
      // its kernels): its send comes when its kernels are done, and every
      // microsecond slept past it is a pipeline's bubble. Short sleeps, still
      // yielding the core; a silent peer (stopped, hung) gets the backoff.
      if (!tracked(w) && othersAlive(w, now))
        sleepNs = std::min(sleepNs, kComputingPeerSleepNs);
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
    std::atomic<int32_t> inMpi{0};     // inside the blocking MPI call of (waitGroup, waitSeq)
    std::atomic<int64_t> waitSeq{0};
    std::atomic<int64_t> waitSince{0};
    std::atomic<int64_t> entered[kMaxGroups] = {}; // collectives entered, per group
    std::atomic<int64_t> left[kMaxGroups] = {};    // the last collective returned from, per group
  };

  static_assert(std::atomic<int64_t>::is_always_lock_free, "slots are shared between processes");

  // Members usually arrive within microseconds: poll that long before
  // sleeping. Then each sleep is 1/8 of the time waited so far, from 10 us up
  // to 1 ms: a late member is noticed at most ~1/8 of its lateness (and 1 ms)
  // after it arrives, and a long wait costs 1000 wakeups a second.
  static constexpr int64_t kSpinNs = 50'000, kMinSleepNs = 10'000, kMaxSleepNs = 1'000'000;
  static constexpr int64_t kComputingPeerSleepNs = 20'000;
  /// A member the blocking call can count on: past this collective, inside
  /// its MPI call, or polling for the others. One that arrived and then went
  /// silent (stopped while it waited) is not: the call would spin on it.
  bool ready(const Slot &s, const WaitFor &w, int64_t now) const {
    int64_t entered = s.entered[w.group].load(std::memory_order_acquire);
    if (entered != w.seq)
      return entered > w.seq;
    if (s.left[w.group].load(std::memory_order_acquire) >= w.seq)
      return true;
    if (s.inMpi.load(std::memory_order_acquire) && s.waitGroup.load(std::memory_order_relaxed) == w.group &&
        s.waitSeq.load(std::memory_order_relaxed) == w.seq)
      return true;
    return now - s.heartbeat.load(std::memory_order_relaxed) <= kActiveNs;
  }

  // A member that polled this recently is taking part in moving the data.
  static constexpr int64_t kActiveNs = 5'000'000;
  static constexpr int64_t kStoppedNs = 200'000'000;
  // Inside a blocking call, a member counts as silent after 50 ms without a
  // heartbeat (its backstop thread beats every 10 ms while it is inside MPI),
  // and the pause starts no sooner than 20 ms into the call.
  static constexpr int64_t kSilentNs = 50'000'000, kPauseAfterNs = 20'000'000;

  Watchdog() = default;

  static void setWaiting(Slot *me, const WaitFor &w, int64_t now) {
    me->waitGroup.store(w.group, std::memory_order_relaxed);
    me->waitSeq.store(w.seq, std::memory_order_relaxed);
    me->waitSince.store(now, std::memory_order_relaxed);
    me->waitOp.store(static_cast<int32_t>(w.op), std::memory_order_release);
  }

  static TimeoutHandler &handler() {
    static TimeoutHandler h = nullptr;
    return h;
  }

  /// The backstop thread: it makes no MPI call. It counts only the time it
  /// has run itself (ticks of at most 2 x 100 ms), so a rank that was stopped
  /// does not blame the others for its own pause.
  void backstop() {
    constexpr int64_t tick = 10'000'000;
    uint64_t seen = 0;
    int64_t blockedFor = 0, last = nowNs();
    while (!stopping_.load(std::memory_order_acquire)) {
      timespec ts{0, tick};
      nanosleep(&ts, nullptr);
      int64_t now = nowNs();
      uint64_t gen = blockedGen_.load(std::memory_order_acquire);
      if (gen != seen)
        blockedFor = 0, seen = gen;
      else if (gen & 1)
        blockedFor += std::min(now - last, 2 * tick);
      last = now;
      if (!(gen & 1))
        continue;
      heartbeat(); // the main thread is inside MPI: this process is alive
      // A member went silent inside the call (stopped mid-transfer): MPI
      // would spin on it; the main thread sleeps in a signal handler instead.
      if (blockedFor > kPauseAfterNs && !pausing_.load() && memberSilent(now))
        pthread_kill(blockedThread_.load(), pauseSignal());
      if (blockedFor <= timeoutNs_)
        continue;
      WaitFor w{static_cast<CommOp>(blockedOp_.load()), blockedGroup_.load(), blockedSeq_.load(),
                llvm::ArrayRef<int>(blockedMembers_.load(), blockedCount_.load())};
      if (blockedGen_.load(std::memory_order_acquire) != gen)
        continue; // it returned meanwhile
      std::string msg = diagnose(w, blockedFor, now);
      if (TimeoutHandler h = handler())
        h(msg.c_str());
      msg += "\n";
      if (::write(2, msg.data(), msg.size()) < 0)
        _exit(1);
      _exit(1);
    }
  }

  /// A member of the blocking call in progress that is still in it but has
  /// not shown a sign of life lately. Async-signal-safe (lock-free atomics).
  bool memberSilent(int64_t now) const {
    if (!(blockedGen_.load(std::memory_order_acquire) & 1))
      return false;
    int32_t group = blockedGroup_.load();
    int64_t seq = blockedSeq_.load();
    const int *members = blockedMembers_.load();
    for (size_t i = 0, n = blockedCount_.load(); i < n && group < kMaxGroups; ++i) {
      const Slot *s = slotOf(members[i]);
      if (!s || members[i] == worldRank_)
        continue;
      bool inIt = s->entered[group].load(std::memory_order_acquire) == seq &&
                  s->waitOp.load(std::memory_order_acquire) != static_cast<int32_t>(CommOp::None) &&
                  s->waitSeq.load(std::memory_order_relaxed) == seq;
      if (inIt && now - s->heartbeat.load(std::memory_order_relaxed) > kSilentNs)
        return true;
    }
    return false;
  }

  static int pauseSignal() { return SIGRTMIN + 4; }
  static Watchdog *&paused() {
    static Watchdog *w = nullptr;
    return w;
  }
  /// The pause signal's handler, on the main thread inside MPI: sleeps while
  /// a member is silent (the backstop thread ends the process at the deadline).
  static void pauseWhileSilent(int) {
    Watchdog *w = paused();
    if (!w)
      return;
    int saved = errno;
    w->pausing_.store(true);
    while (w->memberSilent(nowNs())) {
      timespec ts{0, 1'000'000};
      nanosleep(&ts, nullptr);
    }
    w->pausing_.store(false);
    errno = saved;
  }
  void startBackstop() {
    paused() = this;
    struct sigaction sa = {};
    sa.sa_handler = pauseWhileSilent;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(pauseSignal(), &sa, nullptr);
    backstop_ = std::thread([this] { backstop(); });
  }

  static int64_t nowNs() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts); // one clock for every process of the node
    return int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
  }

  static Slot *alignSlot(void *p) {
    auto a = reinterpret_cast<uintptr_t>(p);
    return reinterpret_cast<Slot *>((a + alignof(Slot) - 1) & ~static_cast<uintptr_t>(alignof(Slot) - 1));
  }
  Slot *mine() const { return slots_.empty() ? nullptr : slots_[worldRank_]; }
  Slot *slotOf(int world) const {
    return world >= 0 && world < static_cast<int>(slots_.size()) ? slots_[world] : nullptr;
  }
  bool tracked(const WaitFor &w) const { return w.seq > 0 && w.group < kMaxGroups; }

  /// True while every member has arrived and polled lately: the data is
  /// moving, keep polling. False when one is missing or silent: sleep.
  /// Every other member polled within kActiveNs (on this node).
  bool othersAlive(const WaitFor &w, int64_t now) const {
    for (int m : w.members) {
      const Slot *s = m == worldRank_ ? nullptr : slotOf(m);
      if (m != worldRank_ && (!s || now - s->heartbeat.load(std::memory_order_relaxed) > kActiveNs))
        return false;
    }
    return true;
  }

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
    std::lock_guard<std::mutex> lock(namesMutex_);
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
    if (s->inMpi.load(std::memory_order_acquire)) // its backstop thread beats while it is inside MPI
      return "it has been inside the MPI call of " + what + " for " +
             seconds(now - s->waitSince.load(std::memory_order_relaxed)) +
             (quiet > kSilentNs ? ", silent for " + seconds(quiet) + ": stopped?" : ", alive: waiting in turn");
    if (quiet > kActiveNs * 20)
      return "it entered " + what + " but has not polled for " + seconds(quiet) + ": stopped?";
    return "it has been waiting in " + what + " for " + seconds(now - s->waitSince.load(std::memory_order_relaxed));
  }

  llvm::Error expire(const WaitFor &w, int64_t waited, int64_t now) {
    expired_.store(true, std::memory_order_relaxed);
    return llvm::createStringError(llvm::inconvertibleErrorCode(), diagnose(w, waited, now));
  }
  llvm::Error afterExpiry(const WaitFor &w) const {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   std::string("watchdog: ") + commOpName(w.op) + " of group " + groupName(w.group) +
                                       " not waited for: an earlier wait of this rank passed its deadline");
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
      else if (s->left[w.group].load(std::memory_order_acquire) >= w.seq)
        continue; // done with it: MPI owes this rank's part
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
  mutable std::mutex namesMutex_; // the backstop thread reads names_
  std::once_flag backstopStarted_;
  // The blocking call in progress, for the backstop (blockedGen_ odd: inside).
  std::atomic<uint64_t> blockedGen_{0};
  std::atomic<int32_t> blockedOp_{0}, blockedGroup_{0};
  std::atomic<int64_t> blockedSeq_{0};
  std::atomic<const int *> blockedMembers_{nullptr};
  std::atomic<size_t> blockedCount_{0};
  std::atomic<pthread_t> blockedThread_{};
  std::atomic<bool> pausing_{false}; // the main thread sleeps in pauseWhileSilent
  std::atomic<bool> stopping_{false}; // the destructor stops the backstop thread
  // A wait has passed its deadline: the rank is ending (its caller aborts it).
  // Later waits fail at once instead of each taking the deadline again: a
  // failed program finishes every collective it started (a ZeRO-3 prefetch),
  // which took the launch to twice --collective-timeout.
  std::atomic<bool> expired_{false};
  std::thread backstop_;
  int64_t entered_[kMaxGroups + 1] = {};
};

} // namespace partita::rt
