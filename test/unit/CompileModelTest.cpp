//===- CompileModelTest.cpp - compile as a library ------------------------===//
//
// compileModel keeps no state between calls: compiling layout A, then B, then
// A again in one process gives A's files byte for byte, and they are the files
// `partita compile` writes for the same flags (the CLI is only flags to
// options). Option errors name the flag; notes reach the caller's callback.
// The programs localized in memory (what the planner sizes) size as the
// written plan's do (what inspect prints).
//===----------------------------------------------------------------------===//
#include "driver/Compile.h"
#include "planner/MemoryPrediction.h"
#include "compiler/ir/Printer.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"
#include <gtest/gtest.h>
#include <cstdlib>

using namespace partita;

namespace {

const std::string kModel = std::string(PARTITA_SOURCE_DIR) + "/models/fixtures/gpt_separate_untied_op17_static.onnx";

std::string readFile(const std::string &path) {
  auto buf = llvm::MemoryBuffer::getFile(path);
  return buf ? (*buf)->getBuffer().str() : "<cannot read " + path + ">";
}

/// The folders the tests made, removed when the tests end.
struct TempDirs : ::testing::Environment {
  std::vector<std::string> dirs;
  void TearDown() override {
    for (const std::string &d : dirs)
      llvm::sys::fs::remove_directories(d);
  }
};
TempDirs *const temps = static_cast<TempDirs *>(::testing::AddGlobalTestEnvironment(new TempDirs));

std::string tempDir(const char *tag) {
  llvm::SmallString<128> dir;
  EXPECT_FALSE(llvm::sys::fs::createUniqueDirectory(std::string("partita-compile-") + tag, dir));
  temps->dirs.push_back(dir.str().str());
  return dir.str().str();
}

/// Compiles `o` with the library into a new folder; returns the folder.
std::string compileInto(const CompileOptions &o, const char *tag) {
  auto compiled = compileModel(o);
  EXPECT_TRUE(static_cast<bool>(compiled)) << (compiled ? "" : llvm::toString(compiled.takeError()));
  if (!compiled)
    return "";
  std::string dir = tempDir(tag) + "/out";
  llvm::Error err = writeCompiledPlan(*compiled, dir);
  EXPECT_FALSE(static_cast<bool>(err)) << llvm::toString(std::move(err));
  return dir;
}

CompileOptions tensorParallelTraining() {
  CompileOptions o;
  o.model = kModel;
  o.tp = 2;
  o.dp = 2;
  o.zero = 1;
  o.train = true;
  return o;
}

CompileOptions pipelineTraining() {
  CompileOptions o;
  o.model = kModel;
  o.pp = 2;
  o.train = true;
  o.precision = "bf16";
  return o;
}

} // namespace

TEST(CompileModel, SameLayoutSameFilesWhateverCameBefore) {
  std::string first = compileInto(tensorParallelTraining(), "a1");
  std::string other = compileInto(pipelineTraining(), "b");
  std::string again = compileInto(tensorParallelTraining(), "a2");
  ASSERT_FALSE(first.empty() || other.empty() || again.empty());
  for (const char *file : {"/plan.json", "/global.pir", "/rank0/forward.pir", "/rank1/backward.pir", "/rank1/step.pir"})
    EXPECT_EQ(readFile(first + file), readFile(again + file)) << file;
  EXPECT_NE(readFile(first + "/plan.json"), readFile(other + "/plan.json"));
}

TEST(CompileModel, TheCliWritesWhatTheLibraryWrites) {
  std::string library = compileInto(pipelineTraining(), "lib");
  std::string cli = tempDir("cli") + "/out";
  std::string cmd = std::string(PARTITA_TOOL) + " compile " + kModel + " --pp 2 --train --precision bf16 -o " + cli +
                    " > /dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  for (const char *file : {"/plan.json", "/global.pir", "/rank1/forward.pir", "/rank0/backward.pir"})
    EXPECT_EQ(readFile(library + file), readFile(cli + file)) << file;
}

TEST(CompileModel, OptionErrorsNameTheFlag) {
  CompileOptions o;
  o.model = kModel;
  o.tp = 0;
  auto r = compileModel(o);
  ASSERT_FALSE(static_cast<bool>(r));
  EXPECT_EQ(llvm::toString(r.takeError()), "--tp, --pp and --dp must be >= 1");
  o.tp = 1;
  o.zero = 2;
  auto z = compileModel(o);
  ASSERT_FALSE(static_cast<bool>(z));
  EXPECT_EQ(llvm::toString(z.takeError()), "--zero 2 needs --train (ZeRO partitions the optimizer's state)");
}

TEST(CompileModel, NotesReachTheCallback) {
  CompileOptions o;
  o.model = kModel;
  o.train = true;
  o.zero = 1; // with dp 1: partitions nothing
  std::vector<std::string> lines;
  o.diagnostic = [&](const std::string &line) { lines.push_back(line); };
  auto r = compileModel(o);
  ASSERT_TRUE(static_cast<bool>(r)) << llvm::toString(r.takeError());
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].rfind("note: --zero 1 with --dp 1 partitions nothing", 0), 0u) << lines[0];
  EXPECT_EQ(r->plan.worldSize(), 1);
  EXPECT_EQ(r->stages.size(), 1u);
}

// The planner sizes layouts it never writes: each rank's memory by category
// from the programs localized in memory equals inspect's from the written
// folder (whose figures launch --memory checks, test/lit/launch/memory-*).
TEST(CompileModel, ProgramsInMemorySizeAsTheWrittenPlan) {
  CompileOptions zero3 = tensorParallelTraining();
  zero3.zero = 3;
  CompileOptions pipelineTp = pipelineTraining();
  pipelineTp.tp = 2;
  pipelineTp.recompute = "full";
  CompileOptions tied = pipelineTraining(); // bf16, the table on both stages
  tied.model = std::string(PARTITA_SOURCE_DIR) + "/models/fixtures/gpt_fused_tied_op17_static.onnx";
  tied.dp = 2;
  tied.zero = 1;
  for (const CompileOptions &o : {tensorParallelTraining(), zero3, pipelineTraining(), pipelineTp, tied}) {
    std::string dir = compileInto(o, "sized");
    ASSERT_FALSE(dir.empty());
    auto written = readPlan(dir + "/plan.json");
    ASSERT_TRUE(static_cast<bool>(written)) << llvm::toString(written.takeError());
    MemoryPredictionOptions fromFiles;
    fromFiles.dir = dir;
    fromFiles.microBatches = 4;
    auto expected = MemoryPredictor(*written, fromFiles).predict();
    ASSERT_TRUE(static_cast<bool>(expected)) << llvm::toString(expected.takeError());

    auto compiled = compileModel(o);
    ASSERT_TRUE(static_cast<bool>(compiled)) << llvm::toString(compiled.takeError());
    auto local = localizePrograms(*compiled);
    ASSERT_TRUE(static_cast<bool>(local)) << llvm::toString(local.takeError());
    std::map<std::string, const Graph *> programs;
    for (const LocalProgram &lp : local->programs)
      programs[lp.rel] = lp.graph.get();
    MemoryPredictionOptions inMemory = fromFiles;
    inMemory.dir.clear();
    inMemory.programs = &programs;
    auto actual = MemoryPredictor(compiled->plan, inMemory).predict();
    ASSERT_TRUE(static_cast<bool>(actual)) << llvm::toString(actual.takeError());

    ASSERT_EQ(actual->size(), expected->size());
    for (size_t i = 0; i < actual->size(); ++i) {
      const RankMemory &a = (*actual)[i], &e = (*expected)[i];
      EXPECT_EQ(a.rank->rank, e.rank->rank);
      EXPECT_EQ(a.peak, e.peak) << "rank " << e.rank->rank << ", pp " << o.pp << " tp " << o.tp << " zero " << o.zero;
      for (size_t c = 0; c < rt::kMemoryCategories; ++c)
        EXPECT_EQ(a.bytes[c], e.bytes[c]) << "rank " << e.rank->rank << ", "
                                          << rt::memoryCategoryName(static_cast<rt::MemoryCategory>(c));
      EXPECT_EQ(a.sizes.collectives, e.sizes.collectives);
      EXPECT_EQ(a.sizes.comm, e.sizes.comm);
    }
  }
}
