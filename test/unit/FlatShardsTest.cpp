// partita.FlattenShards / UnflattenShards (ZeRO's flat buffers) against the
// sharding they stand for: block k of x split on `dim` into `blocks` parts
// inside `outer` blocks is, as numpy writes it, x.reshape(pre, outer, blocks,
// r, post)[:, :, k] flattened, then zero-padded to `length`. Checked for the
// CPU kernel and the compiler's evaluator, and the round trip.
#include "compiler/ir/Parser.h"
#include "compiler/ir/Verifier.h"
#include "compiler/ops/OpRegistry.h"
#include "runtime/core/Device.h"
#include "runtime/executor/Program.h"
#include <gtest/gtest.h>
#include <cstring>
#include <memory>

using namespace partita;

namespace {

// x : [pre = 3, n = outer * blocks * r = 3 * 2 * 2, post = 2]
constexpr int64_t kPre = 3, kOuter = 3, kBlocks = 2, kR = 2, kPost = 2, kLength = 40;

std::vector<float> xValues() {
  std::vector<float> x(kPre * kOuter * kBlocks * kR * kPost);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = 1.0f + static_cast<float>(i);
  return x;
}

/// The flat buffers by the numpy formula above.
std::vector<float> expectedFlat(const std::vector<float> &x) {
  std::vector<float> flat(kBlocks * kLength, 0.0f);
  for (int64_t k = 0; k < kBlocks; ++k) {
    int64_t i = 0;
    for (int64_t p = 0; p < kPre; ++p)
      for (int64_t o = 0; o < kOuter; ++o)
        for (int64_t j = 0; j < kR; ++j)
          for (int64_t q = 0; q < kPost; ++q)
            flat[k * kLength + i++] = x[(((p * kOuter + o) * kBlocks + k) * kR + j) * kPost + q];
    EXPECT_EQ(i, kPre * kOuter * kR * kPost); // the rest of the buffer is padding
  }
  return flat;
}

const char *kGraph = "graph @g(%x: f32[3,12,2]) opset 17 {\n"
                     "  %f = partita.FlattenShards(%x) {blocks = 2, dim = 1, length = 40, outer = 3} : f32[80]\n"
                     "  %y = partita.UnflattenShards(%f) {blocks = 2, dim = 1, outer = 3, shape = [3, 12, 2]} : f32[3,12,2]\n"
                     "  return %f, %y\n}\n";

TEST(FlatShards, KernelMatchesTheShardingsBlocks) {
  auto g = parseGraph(kGraph, "t.pir");
  ASSERT_TRUE(static_cast<bool>(g)) << llvm::toString(g.takeError());
  rt::CpuDevice device;
  auto program = rt::Program::load(**g, device);
  ASSERT_TRUE(static_cast<bool>(program)) << llvm::toString(program.takeError());
  std::vector<float> x = xValues(), want = expectedFlat(x);
  llvm::StringMap<rt::TensorView> feeds;
  feeds["x"] = rt::TensorView{DType::F32, {3, 12, 2}, x.data()};
  auto outs = (*program)->run(feeds);
  ASSERT_TRUE(static_cast<bool>(outs)) << llvm::toString(outs.takeError());
  const float *flat = (*outs)[0].as<float>(), *back = (*outs)[1].as<float>();
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_EQ(flat[i], want[i]) << "flat element " << i;
  for (size_t i = 0; i < x.size(); ++i)
    EXPECT_EQ(back[i], x[i]) << "round trip element " << i;
}

TEST(FlatShards, EvaluatorMatchesTheShardingsBlocks) {
  auto g = parseGraph(kGraph, "t.pir");
  ASSERT_TRUE(static_cast<bool>(g)) << llvm::toString(g.takeError());
  std::vector<float> x = xValues(), want = expectedFlat(x);
  auto bytes = std::make_shared<std::vector<uint8_t>>(x.size() * sizeof(float));
  std::memcpy(bytes->data(), x.data(), bytes->size());
  Tensor xt(DType::F32, {3, 12, 2}, bytes);
  std::vector<Node *> nodes = (*g)->nodes();
  auto flat = evaluateNode(*nodes[0], {xt});
  ASSERT_TRUE(static_cast<bool>(flat)) << llvm::toString(flat.takeError());
  std::vector<double> got = (*flat)[0].toDoubles();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_EQ(got[i], want[i]) << "flat element " << i;
  auto back = evaluateNode(*nodes[1], {(*flat)[0]});
  ASSERT_TRUE(static_cast<bool>(back)) << llvm::toString(back.takeError());
  EXPECT_TRUE((*back)[0].sameContent(xt));
}

TEST(FlatShards, RefusesBlocksThatDoNotDivideOrFit) {
  for (const char *bad : {"%f = partita.FlattenShards(%x) {blocks = 5, dim = 1, length = 40} : f32[200]",
                          "%f = partita.FlattenShards(%x) {blocks = 2, dim = 1, length = 30} : f32[60]"}) {
    std::string text = std::string("graph @g(%x: f32[3,12,2]) opset 17 {\n  ") + bad + "\n  return %f\n}\n";
    auto g = parseGraph(text, "t.pir");
    ASSERT_TRUE(static_cast<bool>(g)) << llvm::toString(g.takeError());
    llvm::Error err = verifyGraph(**g);
    EXPECT_TRUE(static_cast<bool>(err)) << bad;
    if (err)
      EXPECT_NE(llvm::toString(std::move(err)).find("partita.FlattenShards"), std::string::npos);
  }
}

} // namespace
