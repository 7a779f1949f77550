#include "runtime/io/Npy.h"
#include "llvm/Support/FileSystem.h"
#include <cstdlib>
#include <gtest/gtest.h>

using namespace partita;

// A file written by numpy itself (the committed fixture inputs): int64 [2,16].
TEST(Npy, ReadsNumpyWrittenFile) {
  auto t = rt::readNpy(std::string(PARTITA_SOURCE_DIR) + "/models/fixtures/gpt_fused_tied_op17_static.b2.in.ids.npy");
  ASSERT_TRUE(static_cast<bool>(t)) << llvm::toString(t.takeError());
  EXPECT_EQ(t->dtype(), DType::I64);
  EXPECT_EQ(t->shape(), (Shape{2, 16}));
  for (int64_t i = 0; i < t->numel(); ++i) {
    EXPECT_GE(t->intAt(i), 0);
    EXPECT_LT(t->intAt(i), 64); // the fixtures' vocabulary
  }
}

TEST(Npy, WriteThenNumpyReads) {
  llvm::SmallString<128> path;
  ASSERT_FALSE(llvm::sys::fs::createTemporaryFile("partita", "npy", path));
  float data[6] = {1.5f, -2.0f, 0.0f, 3.25f, 1e-8f, 7.0f};
  ASSERT_FALSE(static_cast<bool>(rt::writeNpy(path, DType::F32, {2, 3}, data)));
  // numpy is the independent reader.
  std::string cmd = "/usr/bin/python3 -c \"import numpy as np; a=np.load('" + path.str().str() +
                    "'); assert a.dtype == np.float32 and a.shape == (2,3), a; "
                    "assert (a.ravel() == np.array([1.5,-2,0,3.25,1e-8,7], np.float32)).all()\"";
  EXPECT_EQ(std::system(cmd.c_str()), 0);
  auto back = rt::readNpy(path);
  ASSERT_TRUE(static_cast<bool>(back));
  EXPECT_EQ(back->toDoubles()[3], 3.25);
  llvm::sys::fs::remove(path);
}
