// copyOverlap against an element-by-element reference: every element of the
// source piece is placed in the whole tensor by its multi-index (in the view
// with outer factors, then back to the whole's index), and lands in the
// destination piece exactly when that index lies in its box and flat range.
#include "runtime/checkpoint/StateBox.h"
#include "StateBoxReference.h"
#include <gtest/gtest.h>
#include <random>
#include <vector>

using namespace partita;
using namespace partita::rt;

using partita::rt::testing::globalIndex;

namespace {

/// A random box of the view of `whole` with outer factors `outer`, and a
/// random flat range of it.
StateBox randomPiece(std::mt19937 &rng, const Shape &whole, const Shape &outer) {
  StateBox b;
  b.outer = outer;
  for (size_t d = 0; d < whole.size(); ++d) {
    Shape dims = outer[d] > 1 ? Shape{outer[d], whole[d] / outer[d]} : Shape{whole[d]};
    for (int64_t n : dims) {
      int64_t a = std::uniform_int_distribution<int64_t>(0, n - 1)(rng);
      int64_t e = std::uniform_int_distribution<int64_t>(1, n - a)(rng);
      b.start.push_back(a);
      b.extent.push_back(e);
    }
  }
  int64_t n = b.boxNumel();
  b.flatBegin = std::uniform_int_distribution<int64_t>(0, n)(rng);
  b.flatEnd = std::uniform_int_distribution<int64_t>(b.flatBegin, n)(rng);
  return b;
}

} // namespace

TEST(StateBox, CopyOverlapPlacesEveryElementByItsIndex) {
  std::mt19937 rng(7);
  int64_t total = 0;
  for (int trial = 0; trial < 2000; ++trial) {
    Shape whole, outerA, outerB;
    int rank = std::uniform_int_distribution<int>(1, 4)(rng);
    for (int d = 0; d < rank; ++d) {
      int64_t o = std::uniform_int_distribution<int64_t>(1, 3)(rng);
      whole.push_back(o * std::uniform_int_distribution<int64_t>(1, 4)(rng));
      // Each piece sees the dimension with its outer factor or without.
      outerA.push_back(std::uniform_int_distribution<int>(0, 1)(rng) ? o : 1);
      outerB.push_back(std::uniform_int_distribution<int>(0, 1)(rng) ? o : 1);
    }
    StateBox from = randomPiece(rng, whole, outerA), to = randomPiece(rng, whole, outerB);
    std::vector<int32_t> src(static_cast<size_t>(from.numel())), dst(static_cast<size_t>(to.numel()), -1);
    for (int64_t k = 0; k < from.numel(); ++k)
      src[static_cast<size_t>(k)] = static_cast<int32_t>(globalIndex(from, whole, k));
    int64_t copied = copyOverlap(src.data(), from, dst.data(), to, whole, sizeof(int32_t));
    // Reference: the destination's elements whose global index the source holds.
    std::vector<bool> held(static_cast<size_t>(numElements(whole)), false);
    for (int32_t g : src)
      held[static_cast<size_t>(g)] = true;
    int64_t expected = 0;
    for (int64_t k = 0; k < to.numel(); ++k) {
      int64_t g = globalIndex(to, whole, k);
      int32_t want = held[static_cast<size_t>(g)] ? static_cast<int32_t>(g) : -1;
      ASSERT_EQ(dst[static_cast<size_t>(k)], want) << "trial " << trial << " element " << k;
      expected += want >= 0;
    }
    ASSERT_EQ(copied, expected) << "trial " << trial;
    total += copied;
  }
  EXPECT_GT(total, 0);
}

// As a resume reads: the saved pieces tile the whole tensor (a grid of
// shards, each cut into data-parallel flat parts); any piece wanted, under
// any view, is filled whole and right from those that overlap it.
TEST(StateBox, SavedTilesFillAnyWantedPiece) {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 300; ++trial) {
    Shape whole, outer, parts;
    int rank = std::uniform_int_distribution<int>(1, 3)(rng);
    for (int d = 0; d < rank; ++d) {
      int64_t o = std::uniform_int_distribution<int64_t>(1, 3)(rng), p = std::uniform_int_distribution<int64_t>(1, 3)(rng);
      outer.push_back(o);
      parts.push_back(p); // the inner part of the dimension split p ways
      whole.push_back(o * p * std::uniform_int_distribution<int64_t>(1, 3)(rng));
    }
    const int64_t dp = std::uniform_int_distribution<int64_t>(1, 3)(rng), n = numElements(whole);
    std::vector<StateBox> saved;
    Shape tile(static_cast<size_t>(rank), 0);
    for (;;) { // every tile of the grid
      StateBox box;
      box.outer = outer;
      for (int d = 0; d < rank; ++d) {
        int64_t inner = whole[d] / outer[d] / parts[d];
        if (outer[d] > 1) {
          box.start.push_back(0);
          box.extent.push_back(outer[d]);
        }
        box.start.push_back(tile[d] * inner);
        box.extent.push_back(inner);
      }
      int64_t m = box.boxNumel(), k = (m + dp - 1) / dp;
      for (int64_t x = 0; x < dp; ++x) {
        StateBox part = box;
        part.flatBegin = std::min(m, x * k);
        part.flatEnd = std::min(m, (x + 1) * k);
        saved.push_back(part);
      }
      int d = rank - 1;
      while (d >= 0 && ++tile[d] == parts[d])
        tile[d--] = 0;
      if (d < 0)
        break;
    }
    Shape noOuter(static_cast<size_t>(rank), 1);
    StateBox want = randomPiece(rng, whole, std::uniform_int_distribution<int>(0, 1)(rng) ? outer : noOuter);
    std::vector<int32_t> dst(static_cast<size_t>(want.numel()), -1);
    int64_t filled = 0, covered = 0;
    for (const StateBox &piece : saved) {
      std::vector<int32_t> src(static_cast<size_t>(piece.numel()));
      for (int64_t k = 0; k < piece.numel(); ++k)
        src[static_cast<size_t>(k)] = static_cast<int32_t>(globalIndex(piece, whole, k));
      covered += piece.numel();
      filled += copyOverlap(src.data(), piece, dst.data(), want, whole, sizeof(int32_t));
    }
    ASSERT_EQ(covered, n) << "trial " << trial << ": the tiles are not the whole tensor";
    ASSERT_EQ(filled, want.numel()) << "trial " << trial;
    for (int64_t k = 0; k < want.numel(); ++k)
      ASSERT_EQ(dst[static_cast<size_t>(k)], globalIndex(want, whole, k)) << "trial " << trial << " element " << k;
  }
}

TEST(StateBox, ARankZeroTensorIsOneElement) {
  StateBox a = StateBox::whole({}, {}, {}), b = StateBox::whole({}, {}, {});
  float x = 3.5f, y = 0;
  EXPECT_EQ(copyOverlap(&x, a, &y, b, Shape{}, sizeof(float)), 1);
  EXPECT_EQ(y, 3.5f);
}
