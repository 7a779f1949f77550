//===- MockCommunicator.cpp -----------------------------------------------===//
#include "MockCommunicator.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <thread>

namespace partita::test {

using ReduceOp = rt::Communicator::ReduceOp;

enum class MockKind { AllReduce, AllGather, ReduceScatter, Broadcast, Barrier, Split, Send, Recv };

static const char *kindName(MockKind k) {
  switch (k) {
  case MockKind::AllReduce: return "all-reduce";
  case MockKind::AllGather: return "all-gather";
  case MockKind::ReduceScatter: return "reduce-scatter";
  case MockKind::Broadcast: return "broadcast";
  case MockKind::Barrier: return "barrier";
  case MockKind::Split: return "split";
  case MockKind::Send: return "send";
  case MockKind::Recv: return "receive";
  }
  return "?";
}

/// One member's buffers in a collective (a split: its color and key, then
/// the group it lands in).
struct MockPart {
  bool posted = false;
  const void *send = nullptr;
  void *recv = nullptr;
  int color = 0, key = 0;
  std::string name;
  std::shared_ptr<MockGroup> newGroup;
  int newRank = -1;
};

/// A started operation. Collectives: what every member must agree on and
/// each member's part. Point-to-point: one side, matched with the other.
struct MockOperation {
  MockKind kind = MockKind::Barrier;
  size_t count = 0;
  DType dtype = DType::F32;
  ReduceOp op = ReduceOp::Sum;
  int root = 0;
  int firstRank = -1;    // the member that posted first
  bool blocking = false; // MPI never matches a blocking collective with a non-blocking one
  int64_t seq = 0;
  std::vector<MockPart> parts; // by group rank
  int posted = 0;
  int src = -1, dst = -1, tag = 0; // point-to-point, group ranks
  const void *sendBuf = nullptr;
  void *recvBuf = nullptr;
  bool done = false;
  std::string error;

  /// What members of one collective must agree on.
  std::string signature() const {
    std::string s;
    llvm::raw_string_ostream os(s);
    os << (blocking ? "" : "non-blocking ") << kindName(kind) << " of " << count << " " << dtypeName(dtype);
    if (kind == MockKind::AllReduce)
      os << (op == ReduceOp::Max ? " (max)" : " (sum)");
    if (kind == MockKind::Broadcast)
      os << " from rank " << root;
    return os.str();
  }
};

struct MockGroup {
  std::string name;
  std::vector<int> worldRanks; // group rank -> world rank
  double timeoutSeconds = 30;
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<int64_t> started;                          // collectives each member started
  std::map<int64_t, std::shared_ptr<MockOperation>> open; // by sequence number, until all posted
  std::deque<std::shared_ptr<MockOperation>> sends, recvs; // unmatched, in posting order
  int size() const { return static_cast<int>(worldRanks.size()); }
};

namespace {

llvm::Error mockError(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "mock communicator: " + msg);
}

template <typename T> void combine(void *acc, const void *in, size_t count, ReduceOp op) {
  T *a = static_cast<T *>(acc);
  const T *b = static_cast<const T *>(in);
  for (size_t i = 0; i < count; ++i)
    a[i] = op == ReduceOp::Max ? std::max(a[i], b[i]) : a[i] + b[i];
}

/// The element types the mock reduces (those MPI's backend does).
bool reducible(DType dtype) {
  return dtype == DType::F32 || dtype == DType::F64 || dtype == DType::I64 || dtype == DType::I32;
}

/// acc = acc (op) in, elementwise, for a reducible dtype.
void reduceInto(void *acc, const void *in, size_t count, DType dtype, ReduceOp op) {
  switch (dtype) {
  case DType::F32: return combine<float>(acc, in, count, op);
  case DType::F64: return combine<double>(acc, in, count, op);
  case DType::I64: return combine<int64_t>(acc, in, count, op);
  default: return combine<int32_t>(acc, in, count, op);
  }
}

/// The sum (or max) of every part's block `block` of `count` elements.
std::vector<char> reduceBlock(const MockOperation &o, size_t block) {
  size_t bytes = o.count * dtypeSize(o.dtype);
  std::vector<char> acc(bytes);
  std::memcpy(acc.data(), static_cast<const char *>(o.parts[0].send) + block * bytes, bytes);
  for (size_t r = 1; r < o.parts.size(); ++r)
    reduceInto(acc.data(), static_cast<const char *>(o.parts[r].send) + block * bytes, o.count, o.dtype, o.op);
  return acc;
}

/// Moves a collective's data; every member has posted its part.
void perform(MockOperation &o, const MockGroup &g) {
  size_t n = o.parts.size(), bytes = o.count * dtypeSize(o.dtype);
  bool reduces = o.kind == MockKind::AllReduce || o.kind == MockKind::ReduceScatter;
  if (reduces && !reducible(o.dtype)) {
    o.error = ("cannot reduce element type " + dtypeName(o.dtype)).str();
    return;
  }
  switch (o.kind) {
  case MockKind::AllReduce: {
    std::vector<char> sum = reduceBlock(o, 0);
    for (MockPart &p : o.parts)
      std::memcpy(p.recv, sum.data(), bytes);
    break;
  }
  case MockKind::AllGather:
    for (MockPart &p : o.parts)
      for (size_t r = 0; r < n; ++r)
        std::memmove(static_cast<char *>(p.recv) + r * bytes, o.parts[r].send, bytes);
    break;
  case MockKind::ReduceScatter: { // every block first: a receive buffer may be inside a send buffer
    std::vector<std::vector<char>> blocks;
    for (size_t m = 0; m < n; ++m)
      blocks.push_back(reduceBlock(o, m));
    for (size_t m = 0; m < n; ++m)
      std::memcpy(o.parts[m].recv, blocks[m].data(), bytes);
    break;
  }
  case MockKind::Broadcast:
    for (size_t r = 0; r < n; ++r)
      if (static_cast<int>(r) != o.root)
        std::memcpy(o.parts[r].recv, o.parts[o.root].recv, bytes);
    break;
  case MockKind::Split: { // members of one color, ranked by (key, old rank)
    std::map<int, std::vector<int>> byColor;
    for (size_t r = 0; r < n; ++r)
      byColor[o.parts[r].color].push_back(static_cast<int>(r));
    for (auto &[color, members] : byColor) {
      std::stable_sort(members.begin(), members.end(),
                       [&](int a, int b) { return o.parts[a].key < o.parts[b].key; });
      auto group = std::make_shared<MockGroup>();
      group->name = o.parts[members[0]].name;
      group->timeoutSeconds = g.timeoutSeconds;
      for (size_t k = 0; k < members.size(); ++k) {
        group->worldRanks.push_back(g.worldRanks[members[k]]);
        o.parts[members[k]].newGroup = group;
        o.parts[members[k]].newRank = static_cast<int>(k);
      }
      group->started.assign(members.size(), 0);
    }
    break;
  }
  default: break;
  }
}

class MockCommunicator final : public rt::Communicator {
public:
  MockCommunicator(std::shared_ptr<MockGroup> group, int rank) : group_(std::move(group)), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return group_->size(); }

  llvm::Error allReduce(void *buf, size_t count, DType dtype, ReduceOp op) override {
    return await(*collective(blocking(reduction(count, dtype, op)), buf, buf));
  }
  llvm::Error allGather(const void *send, void *recv, size_t count, DType dtype) override {
    return await(*collective(blocking(shape(MockKind::AllGather, count, dtype)), send, recv));
  }
  llvm::Error reduceScatter(const void *send, void *recv, size_t count, DType dtype) override {
    return await(*collective(blocking(shape(MockKind::ReduceScatter, count, dtype)), send, recv));
  }
  llvm::Error broadcast(void *buf, size_t count, DType dtype, int root) override {
    if (auto err = checkRoot(root))
      return err;
    return await(*collective(blocking(broadcastOf(count, dtype, root)), buf, buf));
  }
  llvm::Error send(const void *buf, size_t count, DType dtype, int peer, int tag) override {
    auto started = startSend(buf, count, dtype, peer, tag);
    return started ? wait(*started) : started.takeError();
  }
  llvm::Error recv(void *buf, size_t count, DType dtype, int peer, int tag) override {
    auto started = startRecv(buf, count, dtype, peer, tag);
    return started ? wait(*started) : started.takeError();
  }
  llvm::Error barrier() override {
    return await(*collective(blocking(shape(MockKind::Barrier, 0, DType::F32)), nullptr, nullptr));
  }

  using Communicator::startAllReduce;
  llvm::Expected<int> startAllReduce(void *buf, size_t count, DType dtype, ReduceOp op) override {
    return track(collective(reduction(count, dtype, op), buf, buf));
  }
  llvm::Expected<int> startAllGather(const void *send, void *recv, size_t count, DType dtype) override {
    return track(collective(shape(MockKind::AllGather, count, dtype), send, recv));
  }
  llvm::Expected<int> startReduceScatter(const void *send, void *recv, size_t count, DType dtype) override {
    return track(collective(shape(MockKind::ReduceScatter, count, dtype), send, recv));
  }
  llvm::Expected<int> startBroadcast(void *buf, size_t count, DType dtype, int root) override {
    if (auto err = checkRoot(root))
      return std::move(err);
    return track(collective(broadcastOf(count, dtype, root), buf, buf));
  }
  llvm::Expected<int> startSend(const void *buf, size_t count, DType dtype, int peer, int tag) override {
    return pointToPoint(MockKind::Send, const_cast<void *>(buf), count, dtype, peer, tag);
  }
  llvm::Expected<int> startRecv(void *buf, size_t count, DType dtype, int peer, int tag) override {
    return pointToPoint(MockKind::Recv, buf, count, dtype, peer, tag);
  }
  llvm::Expected<int> startBarrier() override {
    return track(collective(shape(MockKind::Barrier, 0, DType::F32), nullptr, nullptr));
  }

  llvm::Error wait(int handle) override {
    MockOperation *o = find(handle);
    if (!o)
      return mockError("wait on a finished handle");
    llvm::Error err = await(*o);
    std::lock_guard<std::mutex> lock(group_->mutex);
    if (o->done) // succeeded or failed; after a timeout it stays pending
      handles_[handle].reset();
    return err;
  }

  llvm::Expected<bool> test(int handle) override {
    MockOperation *o = find(handle);
    if (!o)
      return mockError("test of a finished handle");
    std::lock_guard<std::mutex> lock(group_->mutex);
    if (!o->done)
      return false;
    std::string error = o->error;
    handles_[handle].reset();
    if (!error.empty())
      return mockError(error);
    return true;
  }

  void progress() override {} // the last member to arrive moves the data

  llvm::Expected<std::unique_ptr<rt::Communicator>> splitGroup(int color, int key,
                                                                llvm::StringRef name) const override {
    MockPart part;
    part.color = color;
    part.key = key;
    part.name = name.str();
    auto o = post(blocking(shape(MockKind::Split, 0, DType::F32)), std::move(part));
    if (auto err = await(*o))
      return std::move(err);
    const MockPart &mine = o->parts[rank_];
    return std::unique_ptr<rt::Communicator>(new MockCommunicator(mine.newGroup, mine.newRank));
  }

private:
  static MockOperation shape(MockKind kind, size_t count, DType dtype) {
    MockOperation o;
    o.kind = kind;
    o.count = count;
    o.dtype = dtype;
    return o;
  }
  static MockOperation reduction(size_t count, DType dtype, ReduceOp op) {
    MockOperation o = shape(MockKind::AllReduce, count, dtype);
    o.op = op;
    return o;
  }
  static MockOperation broadcastOf(size_t count, DType dtype, int root) {
    MockOperation o = shape(MockKind::Broadcast, count, dtype);
    o.root = root;
    return o;
  }
  static MockOperation blocking(MockOperation o) {
    o.blocking = true;
    return o;
  }
  llvm::Error checkRoot(int root) const {
    if (root >= 0 && root < size())
      return llvm::Error::success();
    return mockError("broadcast from rank " + llvm::Twine(root) + " of a group of " + llvm::Twine(size()));
  }

  std::shared_ptr<MockOperation> collective(const MockOperation &proto, const void *send, void *recv) const {
    MockPart part;
    part.send = send;
    part.recv = recv;
    return post(proto, std::move(part));
  }

  /// Posts this member's part of the group's next collective; the last
  /// member to post moves the data.
  std::shared_ptr<MockOperation> post(const MockOperation &proto, MockPart part) const {
    MockGroup &g = *group_;
    std::lock_guard<std::mutex> lock(g.mutex);
    int64_t seq = ++g.started[rank_];
    std::shared_ptr<MockOperation> &slot = g.open[seq];
    if (!slot) {
      slot = std::make_shared<MockOperation>(proto);
      slot->seq = seq;
      slot->firstRank = rank_;
      slot->parts.resize(g.size());
    } else if (slot->signature() != proto.signature() && slot->error.empty()) {
      slot->error = "collective #" + std::to_string(seq) + " of group '" + g.name + "' differs between ranks (rank " +
                    std::to_string(g.worldRanks[slot->firstRank]) + ": " + slot->signature() + "; rank " +
                    std::to_string(g.worldRanks[rank_]) + ": " + proto.signature() + ")";
    }
    std::shared_ptr<MockOperation> o = slot;
    part.posted = true;
    o->parts[rank_] = std::move(part);
    if (++o->posted == g.size()) {
      if (o->error.empty())
        perform(*o, g);
      o->done = true;
      g.open.erase(seq);
      g.changed.notify_all();
    }
    return o;
  }

  llvm::Expected<int> pointToPoint(MockKind kind, void *buf, size_t count, DType dtype, int peer, int tag) {
    MockGroup &g = *group_;
    if (peer < 0 || peer >= g.size())
      return mockError(llvm::Twine(kindName(kind)) + " with rank " + llvm::Twine(peer) + " of a group of " +
                       llvm::Twine(g.size()));
    auto o = std::make_shared<MockOperation>(shape(kind, count, dtype));
    bool sending = kind == MockKind::Send;
    o->src = sending ? rank_ : peer;
    o->dst = sending ? peer : rank_;
    o->tag = tag;
    if (sending)
      o->sendBuf = buf;
    else
      o->recvBuf = buf;
    std::lock_guard<std::mutex> lock(g.mutex);
    auto &others = sending ? g.recvs : g.sends;
    auto it = std::find_if(others.begin(), others.end(), [&](const std::shared_ptr<MockOperation> &x) {
      return x->src == o->src && x->dst == o->dst && x->tag == o->tag;
    });
    if (it == others.end()) {
      (sending ? g.sends : g.recvs).push_back(o);
    } else {
      std::shared_ptr<MockOperation> other = *it;
      others.erase(it);
      const MockOperation &s = sending ? *o : *other;
      const MockOperation &r = sending ? *other : *o;
      if (s.count != r.count || s.dtype != r.dtype)
        o->error = other->error = "rank " + std::to_string(g.worldRanks[s.src]) + " sends " + s.signature() +
                                  " (tag " + std::to_string(s.tag) + "), rank " + std::to_string(g.worldRanks[r.dst]) +
                                  " receives " + r.signature();
      else
        std::memcpy(r.recvBuf, s.sendBuf, s.count * dtypeSize(s.dtype));
      o->done = other->done = true;
      g.changed.notify_all();
    }
    return track(std::move(o));
  }

  /// Waits for `o` until the group's deadline.
  llvm::Error await(const MockOperation &o) const {
    MockGroup &g = *group_;
    std::unique_lock<std::mutex> lock(g.mutex);
    auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(g.timeoutSeconds);
    if (!g.changed.wait_until(lock, deadline, [&] { return o.done; }))
      return mockError(diagnose(o));
    if (!o.error.empty())
      return mockError(o.error);
    return llvm::Error::success();
  }

  /// Why `o` did not complete: the ranks that never arrived (world ranks).
  std::string diagnose(const MockOperation &o) const {
    const MockGroup &g = *group_;
    std::string msg;
    llvm::raw_string_ostream os(msg);
    bool p2p = o.kind == MockKind::Send || o.kind == MockKind::Recv;
    int peer = p2p ? g.worldRanks[o.kind == MockKind::Send ? o.dst : o.src] : -1;
    os << kindName(o.kind);
    if (p2p)
      os << (o.kind == MockKind::Send ? " to" : " from") << " rank " << peer << " (tag " << o.tag << ")";
    else
      os << " #" << o.seq;
    os << " of group '" << g.name << "'";
    if (!p2p) {
      os << " (ranks ";
      llvm::interleave(g.worldRanks, os, ",");
      os << ")";
    }
    os << " did not complete in " << llvm::format("%g", g.timeoutSeconds) << " s; not arrived: ";
    if (p2p) {
      os << "rank " << peer;
    } else {
      std::vector<int> missing;
      for (size_t r = 0; r < o.parts.size(); ++r)
        if (!o.parts[r].posted)
          missing.push_back(g.worldRanks[r]);
      llvm::interleave(missing, os, [&](int r) { os << "rank " << r; }, ", ");
    }
    return os.str();
  }

  llvm::Expected<int> track(std::shared_ptr<MockOperation> o) {
    auto free = std::find(handles_.begin(), handles_.end(), nullptr);
    if (free != handles_.end()) {
      *free = std::move(o);
      return static_cast<int>(free - handles_.begin());
    }
    handles_.push_back(std::move(o));
    return static_cast<int>(handles_.size() - 1);
  }

  MockOperation *find(int handle) const {
    return handle >= 0 && handle < static_cast<int>(handles_.size()) ? handles_[handle].get() : nullptr;
  }

  std::shared_ptr<MockGroup> group_;
  int rank_;
  std::vector<std::shared_ptr<MockOperation>> handles_; // by handle; null once finished
};

} // namespace

MockWorld::MockWorld(int size, double timeoutSeconds) : size_(size), world_(std::make_shared<MockGroup>()) {
  world_->name = "world";
  world_->timeoutSeconds = timeoutSeconds;
  for (int r = 0; r < size; ++r)
    world_->worldRanks.push_back(r);
  world_->started.assign(size, 0);
}

std::unique_ptr<rt::Communicator> MockWorld::communicator(int rank) const {
  return std::make_unique<MockCommunicator>(world_, rank);
}

void MockWorld::run(const std::function<void(int rank, rt::Communicator &comm)> &body) const {
  std::vector<std::thread> ranks;
  for (int r = 0; r < size_; ++r)
    ranks.emplace_back([this, r, &body] {
      std::unique_ptr<rt::Communicator> comm = communicator(r);
      body(r, *comm);
    });
  for (std::thread &t : ranks)
    t.join();
}

} // namespace partita::test
