// A tp=2 program pair compiled by `partita compile --tp 2` runs its two ranks
// as threads of this process through the mock communicator (no MPI); each
// rank's output equals the tp=1 program's on one device, and PyTorch's
// reference, within 1e-5 of the output's scale (as test/e2e does under MPI).
#include "MockCommunicator.h"
#include "compiler/onnx/OnnxImport.h"
#include "runtime/executor/Program.h"
#include "runtime/io/Npy.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Program.h"
#include <gtest/gtest.h>
#include <algorithm>
#include <cmath>

using namespace partita;

namespace {

const std::string kFixtures = std::string(PARTITA_SOURCE_DIR) + "/models/fixtures/";
const char *kModel = "gpt_separate_untied_op14_static";

/// `partita compile` of the fixture into `out` at `tp` ranks (plus `extra`).
void compile(const std::string &out, int tp, const std::string &extra) {
  std::vector<std::string> args = {PARTITA_TOOL,  "compile", kFixtures + kModel + ".onnx", "--tp",
                                   std::to_string(tp), "--materialize-weights", "-o", out};
  if (!extra.empty())
    args.push_back(extra);
  std::vector<llvm::StringRef> argv(args.begin(), args.end());
  std::string error;
  llvm::Optional<llvm::StringRef> quiet[] = {llvm::None, llvm::StringRef("/dev/null"), llvm::None};
  int rc = llvm::sys::ExecuteAndWait(PARTITA_TOOL, argv, llvm::None, quiet, 0, 0, &error);
  ASSERT_EQ(rc, 0) << "partita compile failed: " << error;
}

/// Runs rank program `path` on a fresh CPU device with `env`'s groups; its
/// first output, copied to the host.
void runProgram(const std::string &path, const rt::RuntimeEnv *env, const Tensor &ids, std::vector<float> &out) {
  ImportOptions opts;
  auto g = importOnnx(path, opts);
  ASSERT_TRUE(static_cast<bool>(g)) << llvm::toString(g.takeError());
  rt::CpuDevice device; // on this thread: it sets the thread's float mode
  auto program = rt::Program::load(**g, device, env);
  ASSERT_TRUE(static_cast<bool>(program)) << llvm::toString(program.takeError());
  ASSERT_EQ((*program)->inputs().size(), 1u);
  void *input = device.allocate(ids.byteSize());
  device.copyFromHost(input, ids.data(), ids.byteSize());
  llvm::StringMap<rt::TensorView> feeds;
  feeds[(*program)->inputs()[0].name] = rt::TensorView{ids.dtype(), ids.shape(), input};
  auto outs = (*program)->run(feeds);
  if (!outs) {
    device.deallocate(input);
    FAIL() << llvm::toString(outs.takeError());
  }
  const rt::TensorView &logits = (*outs)[0];
  ASSERT_EQ(logits.dtype, DType::F32);
  out.resize(static_cast<size_t>(logits.numel()));
  device.copyToHost(out.data(), logits.data, logits.bytes());
  device.deallocate(input);
}

/// max |a - b| / max |b|.
double relativeError(const std::vector<float> &a, const std::vector<float> &b) {
  double diff = 0, scale = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    diff = std::max(diff, std::fabs(static_cast<double>(a[i]) - b[i]));
    scale = std::max(scale, std::fabs(static_cast<double>(b[i])));
  }
  return a.size() == b.size() ? diff / scale : INFINITY;
}

class TensorParallelOnThreads : public ::testing::TestWithParam<const char *> {};

} // namespace

TEST_P(TensorParallelOnThreads, RanksEqualTheSingleDeviceRun) {
  llvm::SmallString<128> work;
  ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("partita-tp-threads", work));
  std::string single = (work + "/tp1").str(), pair = (work + "/tp2").str();
  compile(single, 1, "");
  compile(pair, 2, GetParam());
  auto ids = rt::readNpy(kFixtures + kModel + ".b2.in.ids.npy");
  ASSERT_TRUE(static_cast<bool>(ids)) << llvm::toString(ids.takeError());
  auto torch = rt::readNpy(kFixtures + kModel + ".b2.ref.out.npy");
  ASSERT_TRUE(static_cast<bool>(torch)) << llvm::toString(torch.takeError());
  const float *t = reinterpret_cast<const float *>(torch->data());
  std::vector<float> reference(t, t + torch->numel());

  std::vector<float> alone;
  runProgram(single + "/rank0/forward.onnx", nullptr, *ids, alone);
  EXPECT_LE(relativeError(alone, reference), 1e-5) << "the tp=1 program differs from PyTorch";

  std::vector<std::vector<float>> outs(2);
  test::MockWorld(2).run([&](int rank, rt::Communicator &world) {
    rt::RuntimeEnv env;
    env.groups["tp"] = &world;
    runProgram(pair + "/rank" + std::to_string(rank) + "/forward.onnx", &env, *ids, outs[rank]);
  });
  for (int rank = 0; rank < 2; ++rank) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    EXPECT_LE(relativeError(outs[rank], alone), 1e-5) << "tp=2 differs from the single-device run";
    EXPECT_LE(relativeError(outs[rank], reference), 1e-5) << "tp=2 differs from PyTorch";
  }
  llvm::sys::fs::remove_directories(work);
}

INSTANTIATE_TEST_SUITE_P(DeviceSeam, TensorParallelOnThreads, ::testing::Values("", "--sequence-parallel"),
                         [](const ::testing::TestParamInfo<const char *> &info) {
                           return std::string(*info.param ? "sequence_parallel" : "megatron");
                         });
