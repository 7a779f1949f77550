#include "compiler/ir/WeightStore.h"
#include <gtest/gtest.h>
#include <numeric>

using namespace partita;

static WeightRef inlineRef(Shape shape) {
  std::vector<double> v(static_cast<size_t>(numElements(shape)));
  std::iota(v.begin(), v.end(), 0.0);
  Tensor t = Tensor::fromDoubles(DType::F32, shape, v);
  WeightRef r;
  r.type = t.type();
  r.inlineBytes = std::make_shared<std::vector<uint8_t>>(t.data(), t.data() + t.byteSize());
  r.length = t.byteSize();
  return r;
}

// w = arange(12).reshape(3, 4); expectations written from numpy's semantics.
TEST(WeightStore, ViewIsABoxOfTheStoredTensor) {
  WeightStore s;
  s.add("w", inlineRef({3, 4}).view({1, 2}, {2, 2})); // w[1:3, 2:4]
  auto t = s.load("w");
  ASSERT_TRUE(static_cast<bool>(t));
  EXPECT_EQ(t->toDoubles(), (std::vector<double>{6, 7, 10, 11}));
}

TEST(WeightStore, TransposedThenViewed) {
  WeightStore s;
  WeightRef tr = inlineRef({3, 4}).transposed({1, 0}); // w.T: [4,3]
  EXPECT_EQ(tr.type.shape, (Shape{4, 3}));
  s.add("t", tr);
  EXPECT_EQ(s.load("t")->toDoubles(), (std::vector<double>{0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11}));
  s.add("v", tr.view({2, 0}, {2, 3})); // w.T[2:4, :]
  EXPECT_EQ(s.load("v")->toDoubles(), (std::vector<double>{2, 6, 10, 3, 7, 11}));
  s.add("vv", tr.view({2, 0}, {2, 3}).view({1, 1}, {1, 2})); // w.T[3:4, 1:3]
  EXPECT_EQ(s.load("vv")->toDoubles(), (std::vector<double>{7, 11}));
}
