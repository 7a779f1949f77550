//===- CollectiveFormulas.cpp ---------------------------------------------===//
#include "CollectiveFormulas.h"
#include <gtest/gtest.h>
#include <chrono>
#include <string>

namespace partita::test {

using rt::Communicator;

namespace {

constexpr size_t kCount = 37; // not a multiple of a vector width

#define EXPECT_OK(e)                                                                                                   \
  do {                                                                                                                 \
    llvm::Error err_ = (e);                                                                                            \
    EXPECT_FALSE(static_cast<bool>(err_)) << llvm::toString(std::move(err_));                                         \
  } while (0)

/// The handle of a started operation; -1 (and a failure) when it did not start.
int started(llvm::Expected<int> handle) {
  if (!handle) {
    ADD_FAILURE() << llvm::toString(handle.takeError());
    return -1;
  }
  return *handle;
}

template <typename T> DType dtypeOf();
template <> DType dtypeOf<float>() { return DType::F32; }
template <> DType dtypeOf<int64_t>() { return DType::I64; }

template <typename T> void allReduceOf(Communicator &comm) {
  int n = comm.size(), r = comm.rank();
  for (bool async : {false, true}) {
    SCOPED_TRACE(async ? "startAllReduce" : "allReduce");
    std::vector<T> sum(kCount), max(kCount);
    for (size_t i = 0; i < kCount; ++i) {
      sum[i] = static_cast<T>((r + 1) * (i + 1));
      max[i] = static_cast<T>(1000 * r - static_cast<int64_t>(i));
    }
    if (async) {
      int hs = started(comm.startAllReduce(sum.data(), kCount, dtypeOf<T>()));
      int hm = started(comm.startAllReduce(max.data(), kCount, dtypeOf<T>(), Communicator::ReduceOp::Max));
      EXPECT_OK(comm.wait(hs));
      EXPECT_OK(comm.wait(hm));
    } else {
      EXPECT_OK(comm.allReduce(sum.data(), kCount, dtypeOf<T>()));
      EXPECT_OK(comm.allReduce(max.data(), kCount, dtypeOf<T>(), Communicator::ReduceOp::Max));
    }
    for (size_t i = 0; i < kCount; ++i) {
      EXPECT_EQ(sum[i], static_cast<T>((i + 1) * n * (n + 1) / 2)) << "element " << i;
      EXPECT_EQ(max[i], static_cast<T>(1000 * (n - 1) - static_cast<int64_t>(i))) << "element " << i;
    }
  }
}

} // namespace

void checkAllReduce(Communicator &comm) {
  SCOPED_TRACE("rank " + std::to_string(comm.rank()));
  allReduceOf<float>(comm);
  allReduceOf<int64_t>(comm);
}

void checkAllGather(Communicator &comm) {
  SCOPED_TRACE("rank " + std::to_string(comm.rank()));
  int n = comm.size(), r = comm.rank();
  std::vector<float> mine(kCount);
  for (size_t i = 0; i < kCount; ++i)
    mine[i] = static_cast<float>(100 * r + i);
  for (bool async : {false, true}) {
    SCOPED_TRACE(async ? "startAllGather" : "allGather");
    std::vector<float> all(kCount * n, -1);
    if (async)
      EXPECT_OK(comm.wait(started(comm.startAllGather(mine.data(), all.data(), kCount, DType::F32))));
    else
      EXPECT_OK(comm.allGather(mine.data(), all.data(), kCount, DType::F32));
    for (int b = 0; b < n; ++b)
      for (size_t i = 0; i < kCount; ++i)
        EXPECT_EQ(all[b * kCount + i], static_cast<float>(100 * b + i)) << "block " << b << " element " << i;
  }
}

void checkReduceScatter(Communicator &comm) {
  SCOPED_TRACE("rank " + std::to_string(comm.rank()));
  int n = comm.size(), r = comm.rank();
  std::vector<float> blocks(kCount * n);
  for (int b = 0; b < n; ++b)
    for (size_t i = 0; i < kCount; ++i)
      blocks[b * kCount + i] = static_cast<float>(r + 10 * b + i);
  for (bool async : {false, true}) {
    SCOPED_TRACE(async ? "startReduceScatter" : "reduceScatter");
    std::vector<float> mine(kCount, -1);
    if (async)
      EXPECT_OK(comm.wait(started(comm.startReduceScatter(blocks.data(), mine.data(), kCount, DType::F32))));
    else
      EXPECT_OK(comm.reduceScatter(blocks.data(), mine.data(), kCount, DType::F32));
    for (size_t i = 0; i < kCount; ++i)
      EXPECT_EQ(mine[i], static_cast<float>(n * (n - 1) / 2 + n * (10 * r + i))) << "element " << i;
  }
}

void checkBroadcast(Communicator &comm) {
  SCOPED_TRACE("rank " + std::to_string(comm.rank()));
  int root = comm.size() - 1;
  for (bool async : {false, true}) {
    SCOPED_TRACE(async ? "startBroadcast" : "broadcast");
    std::vector<int64_t> buf(kCount, -1);
    if (comm.rank() == root)
      for (size_t i = 0; i < kCount; ++i)
        buf[i] = static_cast<int64_t>(7 * i + 3);
    if (async)
      EXPECT_OK(comm.wait(started(comm.startBroadcast(buf.data(), kCount, DType::I64, root))));
    else
      EXPECT_OK(comm.broadcast(buf.data(), kCount, DType::I64, root));
    for (size_t i = 0; i < kCount; ++i)
      EXPECT_EQ(buf[i], static_cast<int64_t>(7 * i + 3)) << "element " << i;
  }
}

void checkSendRecv(Communicator &comm) {
  SCOPED_TRACE("rank " + std::to_string(comm.rank()));
  int n = comm.size(), r = comm.rank();
  auto message = [](int from, int tag) {
    std::vector<float> m(kCount);
    for (size_t i = 0; i < kCount; ++i)
      m[i] = static_cast<float>(1000 * tag + 10 * from + i);
    return m;
  };
  { // blocking: 0 -> 1, then 1 -> 0 (with two ranks or more)
    SCOPED_TRACE("send/recv");
    std::vector<float> got(kCount, -1);
    if (r == 0 && n > 1) {
      EXPECT_OK(comm.send(message(0, 1).data(), kCount, DType::F32, 1, 1));
      EXPECT_OK(comm.recv(got.data(), kCount, DType::F32, 1, 2));
      EXPECT_EQ(got, message(1, 2));
    } else if (r == 1) {
      EXPECT_OK(comm.recv(got.data(), kCount, DType::F32, 0, 1));
      EXPECT_OK(comm.send(message(1, 2).data(), kCount, DType::F32, 0, 2));
      EXPECT_EQ(got, message(0, 1));
    }
  }
  { // a ring: tags 3 and 4 to the next rank, received from the previous as 4 then 3
    SCOPED_TRACE("startSend/startRecv");
    int next = (r + 1) % n, prev = (r + n - 1) % n;
    std::vector<float> out3 = message(r, 3), out4 = message(r, 4), in3(kCount, -1), in4(kCount, -1);
    int s3 = started(comm.startSend(out3.data(), kCount, DType::F32, next, 3));
    int s4 = started(comm.startSend(out4.data(), kCount, DType::F32, next, 4));
    int r4 = started(comm.startRecv(in4.data(), kCount, DType::F32, prev, 4));
    int r3 = started(comm.startRecv(in3.data(), kCount, DType::F32, prev, 3));
    for (int h : {r3, r4, s4, s3})
      EXPECT_OK(comm.wait(h));
    EXPECT_EQ(in3, message(prev, 3));
    EXPECT_EQ(in4, message(prev, 4));
  }
}

void checkOverlapped(Communicator &comm) {
  SCOPED_TRACE("rank " + std::to_string(comm.rank()));
  int n = comm.size(), r = comm.rank();
  std::vector<float> a(kCount, static_cast<float>(r)), mine(kCount, static_cast<float>(r)), all(kCount * n, -1);
  std::vector<int64_t> b(kCount, 1);
  int ha = started(comm.startAllReduce(a.data(), kCount, DType::F32));
  int hg = started(comm.startAllGather(mine.data(), all.data(), kCount, DType::F32));
  int hb = started(comm.startAllReduce(b.data(), kCount, DType::I64));
  int hz = started(comm.startBarrier());
  EXPECT_OK(comm.wait(hz));
  EXPECT_OK(comm.wait(hb));
  EXPECT_OK(comm.wait(hg));
  // test() never blocks: poll the first one until it says finished.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  bool done = false;
  while (!done && std::chrono::steady_clock::now() < deadline) {
    llvm::Expected<bool> t = comm.test(ha);
    if (!t) {
      ADD_FAILURE() << llvm::toString(t.takeError());
      break;
    }
    done = *t;
    comm.progress();
  }
  EXPECT_TRUE(done) << "test() never reported the all-reduce finished";
  for (size_t i = 0; i < kCount; ++i) {
    EXPECT_EQ(a[i], static_cast<float>(n * (n - 1) / 2));
    EXPECT_EQ(b[i], n);
    for (int k = 0; k < n; ++k)
      EXPECT_EQ(all[k * kCount + i], static_cast<float>(k));
  }
  llvm::Error again = comm.wait(ha); // test() finished it
  EXPECT_TRUE(static_cast<bool>(again)) << "a finished handle was waited for again";
  llvm::consumeError(std::move(again));
}

void checkSplit(Communicator &comm) {
  SCOPED_TRACE("rank " + std::to_string(comm.rank()));
  int n = comm.size(), r = comm.rank();
  auto half = comm.splitGroup(r % 2, r, "parity");
  if (!half) {
    ADD_FAILURE() << llvm::toString(half.takeError());
    return;
  }
  Communicator &h = **half;
  EXPECT_EQ(h.size(), (n - r % 2 + 1) / 2);
  EXPECT_EQ(h.rank(), r / 2);
  int64_t value = r, want = 0;
  for (int k = r % 2; k < n; k += 2)
    want += k;
  EXPECT_OK(h.wait(started(h.startAllReduce(&value, 1, DType::I64))));
  EXPECT_EQ(value, want);
}

void checkEveryCollective(Communicator &comm) {
  checkAllReduce(comm);
  checkAllGather(comm);
  checkReduceScatter(comm);
  checkBroadcast(comm);
  checkSendRecv(comm);
  checkOverlapped(comm);
  checkSplit(comm);
}

} // namespace partita::test
