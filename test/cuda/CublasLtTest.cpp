//===- CublasLtTest.cpp - cuBLASLt opened on first use --------------------===//
//
// runtime/cuda/CublasLt.h opens cuBLASLt with dlopen instead of linking it
// (its initialisers cost every process half a second). These need no GPU:
// the toolkit's library opens here, and a library that is missing or is not
// cuBLASLt gives an error naming it.
//===----------------------------------------------------------------------===//
#include "runtime/cuda/CublasLt.h"
#include <gtest/gtest.h>
#include <string>

using namespace partita::rt::cuda;

TEST(CublasLt, OpensTheToolkitsLibraryAndCallsIt) {
  auto lt = cublasLt();
  ASSERT_TRUE(static_cast<bool>(lt)) << llvm::toString(lt.takeError());
  // Functions that need no GPU: a status's text, a descriptor made and freed.
  EXPECT_STREQ((*lt)->cublasLtGetStatusString(CUBLAS_STATUS_NOT_SUPPORTED),
               "the requested functionality is not supported");
  cublasLtMatmulDesc_t desc = nullptr;
  EXPECT_EQ((*lt)->cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F), CUBLAS_STATUS_SUCCESS);
  ASSERT_NE(desc, nullptr);
  EXPECT_EQ((*lt)->cublasLtMatmulDescDestroy(desc), CUBLAS_STATUS_SUCCESS);
  auto again = cublasLt(); // the same table, not a second dlopen
  ASSERT_TRUE(static_cast<bool>(again));
  EXPECT_EQ(*again, *lt);
}

TEST(CublasLt, AMissingLibraryIsNamed) {
  auto lt = openCublasLt("libpartita-no-such-library.so.13");
  ASSERT_FALSE(static_cast<bool>(lt));
  std::string message = llvm::toString(lt.takeError());
  EXPECT_NE(message.find("cannot use libpartita-no-such-library.so.13: "), std::string::npos) << message;
}

TEST(CublasLt, ALibraryWithoutItsFunctionsIsNamed) {
  auto lt = openCublasLt("libcudart.so." + std::to_string(CUDART_VERSION / 1000)); // loads, is not cuBLASLt
  ASSERT_FALSE(static_cast<bool>(lt));
  std::string message = llvm::toString(lt.takeError());
  EXPECT_NE(message.find("it has no cublasLtCreate"), std::string::npos) << message;
}
