// The mock communicator's collectives against closed forms on 1-4 ranks (the
// same checks run on MPI in test/comm), and its deadlines: a wait that times
// out names the ranks that never arrived, as MPI's watchdog does.
#include "CollectiveFormulas.h"
#include "MockCommunicator.h"
#include <gtest/gtest.h>

using namespace partita;
using partita::test::MockWorld;

namespace {

/// The error's message ("" for success).
std::string message(llvm::Error err) { return err ? llvm::toString(std::move(err)) : ""; }

} // namespace

TEST(MockCommunicator, EveryCollectiveMatchesItsFormula) {
  for (int n : {1, 2, 3, 4}) {
    SCOPED_TRACE(std::to_string(n) + " ranks");
    MockWorld(n).run([](int, rt::Communicator &comm) { test::checkEveryCollective(comm); });
  }
}

TEST(MockCommunicator, AWaitNamesTheRanksThatNeverArrived) {
  MockWorld(3, 0.2).run([](int rank, rt::Communicator &comm) {
    if (rank == 2)
      return; // never enters the all-reduce
    float x[4] = {};
    std::string blocking = message(comm.allReduce(x, 4, DType::F32));
    EXPECT_NE(blocking.find("all-reduce #1 of group 'world' (ranks 0,1,2) did not complete"), std::string::npos)
        << blocking;
    EXPECT_NE(blocking.find("not arrived: rank 2"), std::string::npos) << blocking;
  });
}

TEST(MockCommunicator, AStartedReceiveTimesOutNamingItsPeer) {
  MockWorld(2, 0.2).run([](int rank, rt::Communicator &comm) {
    if (rank == 1)
      return; // never sends
    float x[4] = {};
    auto h = comm.startRecv(x, 4, DType::F32, 1, 9);
    ASSERT_TRUE(static_cast<bool>(h)) << llvm::toString(h.takeError());
    auto polled = comm.test(*h);
    ASSERT_TRUE(static_cast<bool>(polled)) << llvm::toString(polled.takeError());
    EXPECT_FALSE(*polled);
    std::string waited = message(comm.wait(*h));
    EXPECT_NE(waited.find("receive from rank 1 (tag 9) of group 'world' did not complete"), std::string::npos)
        << waited;
  });
}

TEST(MockCommunicator, MismatchedCollectivesFailOnEveryRank) {
  MockWorld(2).run([](int rank, rt::Communicator &comm) {
    float x[4] = {}, all[8] = {};
    std::string err = rank == 0 ? message(comm.allReduce(x, 4, DType::F32))
                                : message(comm.allGather(x, all, 4, DType::F32));
    EXPECT_NE(err.find("collective #1 of group 'world' differs between ranks"), std::string::npos) << err;
    EXPECT_NE(err.find("rank 0: all-reduce of 4 f32 (sum)"), std::string::npos) << err;
    EXPECT_NE(err.find("rank 1: all-gather of 4 f32"), std::string::npos) << err;
  });
}
