// The MPI communicator under mpirun (ctest runs it on 3 ranks): the world
// comes from the factory by name, every collective and its non-blocking form
// meet the same closed forms as the mock's (test/unit/CollectiveFormulas),
// and a started all-reduce that a rank has not joined times out naming it;
// after that every wait of the rank fails at once (its deadline passed: the
// rank is ending, as NCCL aborts a communicator) instead of each waiting the
// deadline again; 16-bit floats sum and
// gather; the watchdog lets late
// members into a collective that a quiet member has left or is blocked in.
#include "../unit/CollectiveFormulas.h"
#include "runtime/comm/CommunicatorFactory.h"
#include "runtime/comm/Watchdog.h"
#include "compiler/ir/Tensor.h"
#include <gtest/gtest.h>
#include <algorithm>
#include <chrono>
#include <thread>
#include <mpi.h>

using namespace partita;

namespace {
rt::Communicator *world = nullptr;
}

TEST(MpiCommunicator, ComesFromTheFactoryByName) {
  std::vector<std::string> names = rt::communicatorBackends();
  EXPECT_TRUE(std::count(names.begin(), names.end(), "mpi"));
  auto none = rt::makeWorldCommunicator("nccl");
  ASSERT_FALSE(static_cast<bool>(none));
  std::string msg = llvm::toString(none.takeError());
  EXPECT_NE(msg.find("no communicator backend 'nccl' (registered: mpi"), std::string::npos) << msg;
}

TEST(MpiCommunicator, EveryCollectiveMatchesItsFormula) { test::checkEveryCollective(*world); }

TEST(MpiCommunicator, AStartedAllReduceTimesOutNamingTheAbsentRanks) {
  rt::CommunicatorOptions shortDeadline;
  shortDeadline.timeoutSeconds = 0.3;
  auto quick = rt::makeWorldCommunicator("mpi", shortDeadline);
  ASSERT_TRUE(static_cast<bool>(quick)) << llvm::toString(quick.takeError());
  int n = (*quick)->size();
  int64_t value = 1;
  if (world->rank() == 0) {
    // Rank 0's request is never waited to its end: MPI completes it in its
    // progress during later tests, so its buffer outlives this test.
    static int64_t pending = 1;
    auto h = (*quick)->startAllReduce(&pending, 1, DType::I64);
    ASSERT_TRUE(static_cast<bool>(h)) << llvm::toString(h.takeError());
    llvm::Error late = (*quick)->wait(*h);
    ASSERT_TRUE(static_cast<bool>(late)) << "the all-reduce completed without the other ranks";
    std::string msg = llvm::toString(std::move(late));
    EXPECT_NE(msg.find("watchdog: all-reduce #1 of group 'world'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("not arrived: rank 1 ("), std::string::npos) << msg;
    auto start = std::chrono::steady_clock::now();
    llvm::Error again = (*quick)->wait(*h); // the deadline passed once: not a second time
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    ASSERT_TRUE(static_cast<bool>(again)) << "a wait after the deadline passed succeeded";
    std::string againMsg = llvm::toString(std::move(again));
    EXPECT_NE(againMsg.find("an earlier wait of this rank passed its deadline"), std::string::npos) << againMsg;
    EXPECT_LT(seconds, 0.1) << "the second wait took the deadline again";
    ASSERT_FALSE(static_cast<bool>(world->barrier())); // the others join; MPI completes the request in its progress
    return;
  } else {
    ASSERT_FALSE(static_cast<bool>(world->barrier()));
    auto h = (*quick)->startAllReduce(&value, 1, DType::I64); // MPI matches non-blocking with non-blocking only
    ASSERT_TRUE(static_cast<bool>(h)) << llvm::toString(h.takeError());
    llvm::Error err = (*quick)->wait(*h);
    EXPECT_FALSE(static_cast<bool>(err)) << llvm::toString(std::move(err));
  }
  EXPECT_EQ(value, n);
}

// What only moves data moves any element type (a bool mask or an int8 table
// across a pipeline cut): MPI has no bool, so these go as bytes. Each rank
// sends its neighbour a pattern of its rank, broadcasts and all-gathers one.
TEST(MpiCommunicator, MovesEveryElementType) {
  const int n = world->size(), me = world->rank();
  for (DType t : {DType::Bool, DType::I8, DType::I16, DType::U16, DType::U8}) {
    const size_t count = 5, bytes = count * dtypeSize(t);
    auto pattern = [&](int rank) {
      std::vector<uint8_t> v(bytes);
      for (size_t i = 0; i < bytes; ++i)
        v[i] = t == DType::Bool ? uint8_t((i + rank) % 2) : uint8_t(17 * rank + i + 1);
      return v;
    };
    std::vector<uint8_t> mine = pattern(me), got(bytes), all(bytes * n), root = me == 1 ? pattern(1) : got;
    int to = (me + 1) % n, from = (me + n - 1) % n;
    auto sent = world->startSend(mine.data(), count, t, to, 7);
    ASSERT_TRUE(static_cast<bool>(sent)) << dtypeName(t).str() << ": " << llvm::toString(sent.takeError());
    ASSERT_FALSE(static_cast<bool>(world->recv(got.data(), count, t, from, 7))) << dtypeName(t).str();
    ASSERT_FALSE(static_cast<bool>(world->wait(*sent))) << dtypeName(t).str();
    EXPECT_EQ(got, pattern(from)) << dtypeName(t).str();
    ASSERT_FALSE(static_cast<bool>(world->allGather(mine.data(), all.data(), count, t))) << dtypeName(t).str();
    for (int r = 0; r < n; ++r)
      EXPECT_EQ(std::vector<uint8_t>(all.begin() + r * bytes, all.begin() + (r + 1) * bytes), pattern(r))
          << dtypeName(t).str() << " from rank " << r;
    ASSERT_FALSE(static_cast<bool>(world->broadcast(root.data(), count, t, 1))) << dtypeName(t).str();
    EXPECT_EQ(root, pattern(1)) << dtypeName(t).str();
  }
  // A reduction needs MPI to know the type: bool is refused, naming it.
  std::vector<uint8_t> flags(4);
  llvm::Error refused = world->allReduce(flags.data(), flags.size(), DType::Bool);
  ASSERT_TRUE(static_cast<bool>(refused));
  EXPECT_NE(llvm::toString(std::move(refused)).find("MPI reductions do not support element type bool"),
            std::string::npos);
}

// Mixed precision's 16-bit floats: an all-reduce sums them (in float32, then
// rounded: these sums are exact) and an all-gather moves their bytes.
TEST(MpiCommunicator, HalfFloatsSumAndGather) {
  int n = world->size(), r = world->rank();
  for (DType t : {DType::BF16, DType::F16}) {
    auto half = [t](float v) { return t == DType::BF16 ? partita::floatToBf16(v) : partita::floatToHalf(v); };
    auto wide = [t](uint16_t v) { return t == DType::BF16 ? partita::bf16ToFloat(v) : partita::halfToFloat(v); };
    std::vector<uint16_t> v{half(0.25f * static_cast<float>(r + 1)), half(-2.0f), half(static_cast<float>(r))};
    ASSERT_FALSE(static_cast<bool>(world->allReduce(v.data(), v.size(), t)));
    EXPECT_EQ(wide(v[0]), 0.25f * static_cast<float>(n * (n + 1) / 2)) << dtypeName(t).str();
    EXPECT_EQ(wide(v[1]), -2.0f * static_cast<float>(n)) << dtypeName(t).str();
    std::vector<uint16_t> mine{half(static_cast<float>(r) + 0.5f)}, all(static_cast<size_t>(n));
    ASSERT_FALSE(static_cast<bool>(world->allGather(mine.data(), all.data(), 1, t)));
    for (int k = 0; k < n; ++k)
      EXPECT_EQ(wide(all[static_cast<size_t>(k)]), static_cast<float>(k) + 0.5f) << dtypeName(t).str();
    std::vector<uint16_t> top{half(static_cast<float>(r))};
    ASSERT_FALSE(static_cast<bool>(world->allReduce(top.data(), 1, t, rt::Communicator::ReduceOp::Max)));
    EXPECT_EQ(wide(top[0]), static_cast<float>(n - 1)) << dtypeName(t).str();
  }
}

// Large reductions run in pieces (a megabyte each, the last one shorter):
// every element of a 3 MB + 3-element all-reduce and reduce-scatter (int32,
// so the sums are exact) equals its formula, across the piece boundaries.
TEST(MpiCommunicator, LargeReductionsInPiecesEqualTheirFormula) {
  int n = world->size(), r = world->rank();
  size_t count = (size_t(3) << 18) + 3; // elements per block
  std::vector<int32_t> v(count);
  for (size_t i = 0; i < count; ++i)
    v[i] = static_cast<int32_t>(i % 1000) * (r + 1);
  ASSERT_FALSE(static_cast<bool>(world->allReduce(v.data(), count, DType::I32)));
  int32_t ranks = n * (n + 1) / 2;
  for (size_t i = 0; i < count; ++i)
    ASSERT_EQ(v[i], static_cast<int32_t>(i % 1000) * ranks) << "all-reduce element " << i;
  std::vector<int32_t> blocks(count * static_cast<size_t>(n)), mine(count);
  for (size_t i = 0; i < blocks.size(); ++i)
    blocks[i] = static_cast<int32_t>(i % 777) + r;
  ASSERT_FALSE(static_cast<bool>(world->reduceScatter(blocks.data(), mine.data(), count, DType::I32)));
  for (size_t i = 0; i < count; ++i)
    ASSERT_EQ(mine[i], n * static_cast<int32_t>((static_cast<size_t>(r) * count + i) % 777) + n * (n - 1) / 2)
        << "reduce-scatter element " << i;
}

// The members share this node, so collectives of 1 MB and more go through
// the group's shared segment (runtime/comm/NodeCollectives.h) in pieces of
// 512 KB staged per member, each reduced in parts cut between the members.
// Every element of collectives a few pieces long (the last piece short, the
// parts uneven over 3 members) equals its formula, for each element type the
// segment reduces (integers, exact in every type: halves hold them up to 256)
// and for a type it only moves; on the world and on a 2-member group.
namespace {
std::vector<uint8_t> bytesOf(DType t, const std::vector<double> &v) {
  Tensor x = Tensor::fromDoubles(t, {static_cast<int64_t>(v.size())}, v);
  return std::vector<uint8_t>(x.data(), x.data() + x.byteSize());
}
std::vector<double> valuesOf(DType t, const std::vector<uint8_t> &b) {
  return Tensor(t, {static_cast<int64_t>(b.size() / dtypeSize(t))}, std::make_shared<const std::vector<uint8_t>>(b))
      .toDoubles();
}
} // namespace

TEST(MpiCommunicator, NodeCollectivesEqualTheirFormula) {
  auto pair = world->splitGroup(world->rank() < 2 ? 0 : 1, world->rank(), "pair");
  ASSERT_TRUE(static_cast<bool>(pair));
  for (rt::Communicator *comm : {world, pair->get()}) {
    int n = comm->size(), r = comm->rank();
    if (n < 2)
      continue;
    size_t count = (size_t(5) << 17) + 7; // elements per block: 2.5 MB of float32, plus 7
    for (DType t : {DType::F32, DType::F64, DType::BF16, DType::F16}) {
      std::vector<double> v(count);
      for (size_t i = 0; i < count; ++i)
        v[i] = static_cast<double>(i % 50) * (r + 1);
      std::vector<uint8_t> x = bytesOf(t, v), y = x;
      ASSERT_FALSE(static_cast<bool>(comm->allReduce(x.data(), count, t))) << dtypeName(t).str();
      std::vector<double> got = valuesOf(t, x);
      for (size_t i = 0; i < count; ++i)
        ASSERT_EQ(got[i], static_cast<double>(i % 50) * (n * (n + 1) / 2)) << dtypeName(t).str() << " sum " << i;
      ASSERT_FALSE(static_cast<bool>(comm->allReduce(y.data(), count, t, rt::Communicator::ReduceOp::Max)));
      got = valuesOf(t, y);
      for (size_t i = 0; i < count; ++i)
        ASSERT_EQ(got[i], static_cast<double>(i % 50) * n) << dtypeName(t).str() << " max " << i;
      std::vector<double> blocks(count * static_cast<size_t>(n));
      for (size_t i = 0; i < blocks.size(); ++i)
        blocks[i] = static_cast<double>(i % 31 + static_cast<size_t>(r));
      std::vector<uint8_t> b = bytesOf(t, blocks), mine(count * dtypeSize(t));
      ASSERT_FALSE(static_cast<bool>(comm->reduceScatter(b.data(), mine.data(), count, t)));
      got = valuesOf(t, mine);
      for (size_t i = 0; i < count; ++i)
        ASSERT_EQ(got[i], static_cast<double>(n * ((static_cast<size_t>(r) * count + i) % 31) + n * (n - 1) / 2))
            << dtypeName(t).str() << " reduce-scatter " << i;
    }
    for (DType t : {DType::F32, DType::U8}) { // an all-gather moves any type's bytes
      std::vector<double> v(count);
      for (size_t i = 0; i < count; ++i)
        v[i] = static_cast<double>((i + static_cast<size_t>(r) * 3) % 101);
      std::vector<uint8_t> x = bytesOf(t, v), all(count * static_cast<size_t>(n) * dtypeSize(t));
      ASSERT_FALSE(static_cast<bool>(comm->allGather(x.data(), all.data(), count, t))) << dtypeName(t).str();
      std::vector<double> got = valuesOf(t, all);
      for (int k = 0; k < n; ++k)
        for (size_t i = 0; i < count; ++i)
          ASSERT_EQ(got[static_cast<size_t>(k) * count + i], static_cast<double>((i + static_cast<size_t>(k) * 3) % 101))
              << dtypeName(t).str() << " all-gather block " << k << " element " << i;
    }
  }
}

// A rank waiting for the others to enter a collective still moves its own
// started sends: here rank 1 enters only once rank 0's 4 MB send (rendezvous,
// moved by the sender's MPI calls) has arrived. Before, rank 0 slept without
// calling MPI and both waited until the deadline (an interleaved pipeline's
// two stages deadlocked so in CI).
TEST(MpiCommunicator, ACollectiveWaitMovesTheRanksStartedSends) {
  rt::CommunicatorOptions deadline;
  deadline.timeoutSeconds = 5;
  auto comm = rt::makeWorldCommunicator("mpi", deadline);
  ASSERT_TRUE(static_cast<bool>(comm)) << llvm::toString(comm.takeError());
  std::vector<float> big(1 << 20, static_cast<float>(world->rank() + 1));
  int64_t one = 1;
  if (world->rank() == 0) {
    auto h = world->startSend(big.data(), big.size(), DType::F32, 1, 7);
    ASSERT_TRUE(static_cast<bool>(h)) << llvm::toString(h.takeError());
    llvm::Error err = (*comm)->allReduce(&one, 1, DType::I64);
    EXPECT_FALSE(static_cast<bool>(err)) << llvm::toString(std::move(err));
    ASSERT_FALSE(static_cast<bool>(world->wait(*h)));
  } else {
    if (world->rank() == 1) {
      llvm::Error got = world->recv(big.data(), big.size(), DType::F32, 0, 7);
      ASSERT_FALSE(static_cast<bool>(got)) << llvm::toString(std::move(got));
      EXPECT_EQ(big.back(), 1.0f);
    }
    llvm::Error err = (*comm)->allReduce(&one, 1, DType::I64);
    EXPECT_FALSE(static_cast<bool>(err)) << llvm::toString(std::move(err));
  }
  EXPECT_EQ(one, world->size());
}

// The arrival table directly (Watchdog.h): rank 0 enters a collective of a
// fresh group, then goes quiet in the world's barrier (another table) while
// the others, who entered late and were descheduled before looking, wait to go
// in. They must not wait for rank 0's next heartbeat (there is none): the root
// of a finished broadcast has left it; a member blocked inside MPI (with or
// without a deadline) is inside it. Before the fix both ended in the deadline
// (first case) or hung (second, without one): ctest's timeout.
namespace {
void enterThenGoQuiet(double timeoutSeconds, bool leaveFirst) {
  auto dog = rt::Watchdog::create(timeoutSeconds);
  int group = dog->addGroup("quiet");
  std::vector<int> members(world->size());
  for (int r = 0; r < world->size(); ++r)
    members[r] = r;
  rt::WaitFor w{rt::CommOp::Broadcast, group, dog->arrive(group), members};
  if (world->rank() == 0) {
    llvm::Error in = dog->awaitArrivals(w);
    ASSERT_FALSE(static_cast<bool>(in)) << llvm::toString(std::move(in));
    if (leaveFirst)
      dog->leave(w); // a root's MPI_Bcast returns once its data is sent
    else
      dog->beginBlocking(w); // inside the blocking call until the others are in
    ASSERT_FALSE(static_cast<bool>(world->barrier()));
    if (!leaveFirst)
      dog->endBlocking(w);
    return;
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(50)); // descheduled between entering and looking
  llvm::Error in = dog->awaitArrivals(w);
  EXPECT_FALSE(static_cast<bool>(in)) << llvm::toString(std::move(in));
  ASSERT_FALSE(static_cast<bool>(world->barrier()));
}
} // namespace

TEST(MpiWatchdog, AMemberThatLeftTheCollectiveDoesNotHoldTheLateOnes) { enterThenGoQuiet(5, true); }

TEST(MpiWatchdog, AMemberInsideABlockingCallWithoutADeadlineLetsTheLateOnesIn) { enterThenGoQuiet(0, false); }

int main(int argc, char **argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  ::testing::InitGoogleTest(&argc, argv);
  int rc = 1;
  {
    auto made = rt::makeWorldCommunicator("mpi");
    if (!made) {
      llvm::errs() << llvm::toString(made.takeError()) << "\n";
    } else {
      world = made->get();
      rc = RUN_ALL_TESTS();
      // Every rank's result decides: one failing rank fails the job.
      int all = rc;
      MPI_Allreduce(&rc, &all, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
      rc = all;
    }
  }
  MPI_Finalize();
  return rc;
}
