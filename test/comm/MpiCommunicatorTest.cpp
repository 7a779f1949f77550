// The MPI communicator under mpirun (ctest runs it on 3 ranks): the world
// comes from the factory by name, every collective and its non-blocking form
// meet the same closed forms as the mock's (test/unit/CollectiveFormulas),
// and a started all-reduce that a rank has not joined times out naming it,
// stays pending, and completes once the rank joins.
#include "../unit/CollectiveFormulas.h"
#include "runtime/comm/CommunicatorFactory.h"
#include <gtest/gtest.h>
#include <algorithm>
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
    auto h = (*quick)->startAllReduce(&value, 1, DType::I64);
    ASSERT_TRUE(static_cast<bool>(h)) << llvm::toString(h.takeError());
    llvm::Error late = (*quick)->wait(*h);
    ASSERT_TRUE(static_cast<bool>(late)) << "the all-reduce completed without the other ranks";
    std::string msg = llvm::toString(std::move(late));
    EXPECT_NE(msg.find("watchdog: all-reduce #1 of group 'world'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("not arrived: rank 1 ("), std::string::npos) << msg;
    ASSERT_FALSE(static_cast<bool>(world->barrier())); // now the others join
    llvm::Error done = (*quick)->wait(*h);              // still pending after the timeout
    EXPECT_FALSE(static_cast<bool>(done)) << llvm::toString(std::move(done));
  } else {
    ASSERT_FALSE(static_cast<bool>(world->barrier()));
    auto h = (*quick)->startAllReduce(&value, 1, DType::I64); // MPI matches non-blocking with non-blocking only
    ASSERT_TRUE(static_cast<bool>(h)) << llvm::toString(h.takeError());
    llvm::Error err = (*quick)->wait(*h);
    EXPECT_FALSE(static_cast<bool>(err)) << llvm::toString(std::move(err));
  }
  EXPECT_EQ(value, n);
}

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
