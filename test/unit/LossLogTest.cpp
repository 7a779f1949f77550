// loss.csv's header and rows, and the parameter shards a rank writes.
#include "runtime/io/Npy.h"
#include "runtime/train/LossLog.h"
#include "runtime/train/ParameterOutput.h"
#include "MockCommunicator.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include <gtest/gtest.h>

using namespace partita;
using namespace partita::rt;

namespace {
struct TempDir {
  llvm::SmallString<128> path;
  TempDir() { EXPECT_FALSE(llvm::sys::fs::createUniqueDirectory("partita-train", path)); }
  ~TempDir() { llvm::sys::fs::remove_directories(path); }
  std::string file(llvm::StringRef rel) const {
    llvm::SmallString<128> p(path);
    llvm::sys::path::append(p, rel);
    return p.str().str();
  }
};
} // namespace

TEST(LossLog, WritesAHeaderAndARowPerStep) {
  TempDir dir;
  {
    auto log = LossLog::open(dir.file("out"), 2, /*progressBar=*/false);
    ASSERT_TRUE(static_cast<bool>(log)) << llvm::toString(log.takeError());
    testing::internal::CaptureStdout();
    ASSERT_FALSE(llvm::errorToBool(log->record(1, 5.5f, 1234.56, 0.5)));
    ASSERT_FALSE(llvm::errorToBool(log->record(2, 4.25f, 99.0, 1.25)));
    EXPECT_EQ(testing::internal::GetCapturedStdout(),
              "step 1/2  loss 5.500000  1235 tokens/s  0.50 s\nstep 2/2  loss 4.250000  99 tokens/s  1.25 s\n");
    ASSERT_FALSE(llvm::errorToBool(log->finish()));
  }
  auto csv = llvm::MemoryBuffer::getFile(dir.file("out/loss.csv"));
  ASSERT_TRUE(static_cast<bool>(csv));
  EXPECT_EQ((*csv)->getBuffer().str(),
            "step,loss,tokens_per_s,elapsed_s\n1,5.50000000,1234.6,0.500\n2,4.25000000,99.0,1.250\n");
}

TEST(ParameterOutput, WritesEachShardUnderItsRank) {
  TempDir dir;
  CpuDevice cpu;
  std::vector<float> w = {1, 2, 3, 4, 5, 6};
  TensorView v{DType::F32, {2, 3}, w.data()};
  ASSERT_FALSE(llvm::errorToBool(writeParameterShards(cpu, dir.path, 3, {"fc.w"}, {&v}, {}, {}, nullptr)));
  auto t = readNpy(dir.file("rank3/fc.w.npy"));
  ASSERT_TRUE(static_cast<bool>(t)) << llvm::toString(t.takeError());
  EXPECT_EQ(t->shape(), (Shape{2, 3}));
  EXPECT_EQ(std::vector<float>(reinterpret_cast<const float *>(t->data()), reinterpret_cast<const float *>(t->data()) + 6), w);
}

// ZeRO-3: each of 2 data-parallel ranks holds its part of a shard's flat
// buffer, padded to a multiple of 2; the written shard is the parts joined,
// the padding dropped, in the shard's shape: a [5] shard from parts of 3, a
// scalar from parts of 1 (whose second part is all padding).
TEST(ParameterOutput, GathersZero3PartsIntoTheShard) {
  TempDir dir;
  CpuDevice cpu;
  partita::test::MockWorld world(2);
  std::vector<std::vector<float>> vec = {{1, 2, 3}, {4, 5, 0}}, scalar = {{7}, {0}};
  world.run([&](int rank, Communicator &comm) {
    TensorView v{DType::F32, {3}, vec[rank].data()}, s{DType::F32, {1}, scalar[rank].data()};
    std::vector<TensorType> shards = {TensorType{DType::F32, {5}, true}, TensorType{DType::F32, {}, true}};
    EXPECT_FALSE(llvm::errorToBool(
        writeParameterShards(cpu, dir.path, rank, {"v", "s"}, {&v, &s}, shards, {true, true}, &comm)));
  });
  for (int rank = 0; rank < 2; ++rank) {
    auto v = readNpy(dir.file("rank" + std::to_string(rank) + "/v.npy"));
    auto s = readNpy(dir.file("rank" + std::to_string(rank) + "/s.npy"));
    ASSERT_TRUE(v && s);
    EXPECT_EQ(v->shape(), (Shape{5}));
    EXPECT_EQ(v->toDoubles(), (std::vector<double>{1, 2, 3, 4, 5}));
    EXPECT_EQ(s->shape(), Shape{});
    EXPECT_EQ(s->toDoubles(), (std::vector<double>{7}));
  }
}
