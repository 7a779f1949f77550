#include "compiler/ir/WeightStore.h"
#include "llvm/Support/FileSystem.h"
#include <gtest/gtest.h>
#include <array>
#include <fstream>
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

// Mixed precision's half parameter: the stored float32 elements rounded as
// they load (bf16 keeps 8 significant bits: 257 -> 256, 1/3 -> 0x3EAB; fp16
// 11: 2049 -> 2048, 1/3 -> 0x3555), views and all; the type stays the stored one.
TEST(WeightStore, LoadAsRoundsToTheHalfType) {
  Tensor t = Tensor::fromDoubles(DType::F32, {2, 2}, {257.0, 1.0 / 3.0, 2049.0, -0.5});
  WeightRef r;
  r.type = t.type();
  r.inlineBytes = std::make_shared<std::vector<uint8_t>>(t.data(), t.data() + t.byteSize());
  r.length = t.byteSize();
  WeightStore s;
  for (auto [dtype, bits] : {std::pair<DType, std::array<uint16_t, 4>>{DType::BF16, {0x4380, 0x3EAB, 0x4500, 0xBF00}},
                             {DType::F16, {0x5C04, 0x3555, 0x6800, 0xB800}}}) {
    WeightRef h = r;
    h.loadAs = dtype;
    EXPECT_EQ(h.heldType(), (TensorType{dtype, {2, 2}, true}));
    s.add("h", h);
    auto held = s.load("h");
    ASSERT_TRUE(static_cast<bool>(held)) << llvm::toString(held.takeError());
    EXPECT_EQ(held->dtype(), dtype);
    const uint16_t *got = reinterpret_cast<const uint16_t *>(held->data());
    EXPECT_EQ((std::array<uint16_t, 4>{got[0], got[1], got[2], got[3]}), bits);
    s.add("col", h.view({0, 1}, {2, 1})); // w[:, 1:2]
    auto col = s.load("col");
    ASSERT_TRUE(static_cast<bool>(col));
    const uint16_t *c = reinterpret_cast<const uint16_t *>(col->data());
    EXPECT_EQ(c[0], bits[1]);
    EXPECT_EQ(c[1], bits[3]);
  }
}

// A kv projection's heads repeated for the ranks that read them
// (replicate-kv-heads): w = arange(12).reshape(3, 4) viewed [:, 2:4] (two
// heads of one column), each repeated 2 times: numpy.repeat(w[:, 2:4], 2, axis=1).
TEST(WeightStore, RepeatedBlocksLoadAndView) {
  WeightStore s;
  WeightRef kv = inlineRef({3, 4}).view({0, 2}, {3, 2}).repeated(1, 1, 2);
  EXPECT_EQ(kv.type.shape, (Shape{3, 4}));
  s.add("kv", kv);
  auto all = s.load("kv");
  ASSERT_TRUE(static_cast<bool>(all)) << llvm::toString(all.takeError());
  EXPECT_EQ(all->toDoubles(), (std::vector<double>{2, 2, 3, 3, 6, 6, 7, 7, 10, 10, 11, 11}));
  // Rank 3 of tp 4's block (columns 3:4): the second copy of head 1, a plain view.
  WeightRef rank3 = kv.view({0, 3}, {3, 1});
  EXPECT_FALSE(rank3.repeat.has_value());
  s.add("r3", rank3);
  EXPECT_EQ(s.load("r3")->toDoubles(), (std::vector<double>{3, 7, 11}));
  // Blocks 2 wide, repeated 3 times: numpy.repeat of whole 2-column heads.
  WeightRef wide = inlineRef({2, 4}).repeated(1, 2, 3);
  s.add("wide", wide);
  EXPECT_EQ(s.load("wide")->toDoubles(), (std::vector<double>{0, 1, 0, 1, 0, 1, 2, 3, 2, 3, 2, 3, 4, 5, 4, 5, 4, 5,
                                                              6, 7, 6, 7, 6, 7}));
  s.add("w4", wide.view({1, 8}, {1, 2})); // row 1, the third copy of head 1
  EXPECT_EQ(s.load("w4")->toDoubles(), (std::vector<double>{6, 7}));
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

// Transposes compose with each other and with a view taken before them.
TEST(WeightStore, TransposesCompose) {
  WeightStore s;
  s.add("tt", inlineRef({3, 4}).transposed({1, 0}).transposed({1, 0})); // (w.T).T = w
  EXPECT_EQ(s.load("tt")->toDoubles(), (std::vector<double>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}));
  s.add("vt", inlineRef({3, 4}).view({1, 2}, {2, 2}).transposed({1, 0})); // w[1:3, 2:4].T
  EXPECT_EQ(s.load("vt")->toDoubles(), (std::vector<double>{6, 10, 7, 11}));
}

namespace {
/// A real external data file: `garbage` bytes of 0xff (NaN as f32) before
/// the weight, then the f32 tensor of `shape` with element i = i * 0.5, then
/// `garbage` bytes of 0xff again; `keep` (when set) truncates the file after
/// that many bytes of the weight.
struct ExternalFile {
  std::string path;
  WeightRef ref;

  ExternalFile(Shape shape, uint64_t garbage = 40, int64_t keep = -1) {
    llvm::SmallString<128> p;
    EXPECT_FALSE(llvm::sys::fs::createTemporaryFile("partita-weights", "data", p));
    path = p.str().str();
    int64_t n = numElements(shape);
    std::vector<float> v(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i)
      v[i] = static_cast<float>(i) * 0.5f;
    std::string bytes(garbage, '\xff');
    bytes.append(reinterpret_cast<const char *>(v.data()), v.size() * sizeof(float));
    bytes.append(garbage, '\xff');
    if (keep >= 0)
      bytes.resize(garbage + keep);
    std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    ref.type = TensorType{DType::F32, shape, true};
    ref.file = path;
    ref.offset = garbage;
    ref.length = static_cast<uint64_t>(n) * sizeof(float);
  }
  ~ExternalFile() { llvm::sys::fs::remove(path); }
};

/// Element (i, j, ...) of the box at `start` of a tensor of `stored` shape
/// filled with element k = k * 0.5, the box read in the order of `perm`.
std::vector<double> expectedBox(const Shape &stored, const Shape &start, const Shape &size,
                                std::vector<int64_t> perm = {}) {
  if (perm.empty())
    for (size_t d = 0; d < stored.size(); ++d)
      perm.push_back(static_cast<int64_t>(d));
  Shape logical;
  for (int64_t d : perm)
    logical.push_back(size[d]);
  std::vector<double> out;
  for (int64_t i = 0; i < numElements(logical); ++i) {
    Shape idx(stored.size()); // logical index -> stored index
    for (int64_t rem = i, d = static_cast<int64_t>(logical.size()) - 1; d >= 0; --d) {
      idx[perm[d]] = start[perm[d]] + rem % logical[d];
      rem /= logical[d];
    }
    int64_t flat = 0;
    for (size_t d = 0; d < stored.size(); ++d)
      flat = flat * stored[d] + idx[d];
    out.push_back(flat * 0.5);
  }
  return out;
}

/// The same reference with its bytes inline instead of in the file.
WeightRef inlineCopy(const ExternalFile &f) {
  WeightRef r = f.ref;
  std::ifstream in(f.path, std::ios::binary);
  in.seekg(static_cast<std::streamoff>(f.ref.offset));
  auto bytes = std::make_shared<std::vector<uint8_t>>(f.ref.length);
  in.read(reinterpret_cast<char *>(bytes->data()), static_cast<std::streamsize>(bytes->size()));
  r.file.clear();
  r.inlineBytes = bytes;
  return r;
}

std::vector<double> loaded(const WeightRef &ref) {
  WeightStore s;
  s.add("w", ref);
  auto t = s.load("w");
  if (!t) {
    ADD_FAILURE() << llvm::toString(t.takeError());
    return {};
  }
  EXPECT_EQ(t->shape(), ref.type.shape);
  return t->toDoubles();
}
} // namespace

TEST(WeightStoreExternal, WholeRowAndColumnViews) {
  ExternalFile f({6, 8});
  for (const WeightRef &base : {f.ref, inlineCopy(f)}) {
    EXPECT_EQ(loaded(base), expectedBox({6, 8}, {0, 0}, {6, 8}));
    EXPECT_EQ(loaded(base.view({2, 0}, {3, 8})), expectedBox({6, 8}, {2, 0}, {3, 8}));  // w[2:5]
    EXPECT_EQ(loaded(base.view({0, 4}, {6, 4})), expectedBox({6, 8}, {0, 4}, {6, 4}));  // w[:, 4:8]
    EXPECT_EQ(loaded(base.view({1, 3}, {2, 2})), expectedBox({6, 8}, {1, 3}, {2, 2}));  // w[1:3, 3:5]
    EXPECT_EQ(loaded(base.view({5, 7}, {1, 1})), (std::vector<double>{47 * 0.5}));       // the last element
  }
}

TEST(WeightStoreExternal, ThreeDimensionalBox) {
  ExternalFile f({4, 5, 6});
  for (const WeightRef &base : {f.ref, inlineCopy(f)}) {
    EXPECT_EQ(loaded(base.view({1, 2, 3}, {2, 2, 3})), expectedBox({4, 5, 6}, {1, 2, 3}, {2, 2, 3}));
    EXPECT_EQ(loaded(base.view({1, 0, 0}, {2, 5, 6})), expectedBox({4, 5, 6}, {1, 0, 0}, {2, 5, 6}));
    EXPECT_EQ(loaded(base.view({0, 1, 0}, {4, 3, 6})), expectedBox({4, 5, 6}, {0, 1, 0}, {4, 3, 6}));
    // A view of a view: starts add up.
    EXPECT_EQ(loaded(base.view({1, 1, 1}, {3, 4, 5}).view({1, 1, 2}, {2, 2, 2})),
              expectedBox({4, 5, 6}, {2, 2, 3}, {2, 2, 2}));
  }
}

TEST(WeightStoreExternal, TransposedAndTransposedViews) {
  ExternalFile f({6, 8});
  for (const WeightRef &base : {f.ref, inlineCopy(f)}) {
    WeightRef t = base.transposed({1, 0}); // w.T: [8, 6]
    EXPECT_EQ(loaded(t), expectedBox({6, 8}, {0, 0}, {6, 8}, {1, 0}));
    // w.T[2:5, 1:5] = w[1:5, 2:5].T
    EXPECT_EQ(loaded(t.view({2, 1}, {3, 4})), expectedBox({6, 8}, {1, 2}, {4, 3}, {1, 0}));
    // w.T[4:8] (a row shard of the transpose: a column shard of the stored tensor)
    EXPECT_EQ(loaded(t.view({4, 0}, {4, 6})), expectedBox({6, 8}, {0, 4}, {6, 4}, {1, 0}));
  }
  ExternalFile g({4, 5, 6});
  for (const WeightRef &base : {g.ref, inlineCopy(g)}) {
    WeightRef t = base.transposed({2, 0, 1}); // [6, 4, 5]
    EXPECT_EQ(loaded(t), expectedBox({4, 5, 6}, {0, 0, 0}, {4, 5, 6}, {2, 0, 1}));
    // t[1:4, 2:4, 0:3] = transpose(w[2:4, 0:3, 1:4], (2, 0, 1))
    EXPECT_EQ(loaded(t.view({1, 2, 0}, {3, 2, 3})), expectedBox({4, 5, 6}, {2, 0, 1}, {2, 3, 3}, {2, 0, 1}));
  }
}

// A transposed box larger than the 1 MiB read buffer goes through it in
// pieces that start mid-row of the box.
TEST(WeightStoreExternal, TransposedBoxLargerThanTheBuffer) {
  ExternalFile f({512, 1000});
  WeightRef t = f.ref.transposed({1, 0}); // [1000, 512]
  EXPECT_EQ(loaded(t), expectedBox({512, 1000}, {0, 0}, {512, 1000}, {1, 0}));
  // t[:, 100:400] = w[100:400].T: one stored run of 300000 elements.
  EXPECT_EQ(loaded(t.view({0, 100}, {1000, 300})), expectedBox({512, 1000}, {100, 0}, {300, 1000}, {1, 0}));
}

// Only the box's bytes are read: a file cut short right after the box, with
// NaN bytes everywhere else, still yields the box; the whole weight does not
// load, and the error names the weight and the file.
TEST(WeightStoreExternal, ReadsOnlyTheBox) {
  // w[:, 0:3] of [6, 8]: its last element is 5 * 8 + 2; the file ends after it.
  ExternalFile cut({6, 8}, /*garbage=*/40, /*keep=*/(5 * 8 + 3) * 4);
  EXPECT_EQ(loaded(cut.ref.view({0, 0}, {6, 3})), expectedBox({6, 8}, {0, 0}, {6, 3}));
  EXPECT_EQ(loaded(cut.ref.view({0, 0}, {5, 8})), expectedBox({6, 8}, {0, 0}, {5, 8})); // rows 0..4 are whole
  EXPECT_EQ(loaded(cut.ref.transposed({1, 0}).view({0, 0}, {3, 6})),
            expectedBox({6, 8}, {0, 0}, {6, 3}, {1, 0}));
  WeightStore s;
  s.add("w", cut.ref);
  auto whole = s.load("w");
  ASSERT_FALSE(static_cast<bool>(whole));
  std::string msg = llvm::toString(whole.takeError());
  EXPECT_NE(msg.find("weight 'w'"), std::string::npos) << msg;
  EXPECT_NE(msg.find(cut.path), std::string::npos) << msg;
  EXPECT_NE(msg.find("truncated"), std::string::npos) << msg;
  s.add("past", cut.ref.view({5, 0}, {1, 8})); // the last row reaches past the cut
  auto past = s.load("past");
  ASSERT_FALSE(static_cast<bool>(past));
  EXPECT_NE(llvm::toString(past.takeError()).find("truncated"), std::string::npos);
}

// A sparse file: a 1 GiB hole before the weight (no disk, no reads): the view loads.
TEST(WeightStoreExternal, SparseFileBeforeTheWeight) {
  ExternalFile f({6, 8}, /*garbage=*/0);
  WeightRef ref = f.ref;
  std::string sparse = f.path + ".sparse";
  {
    std::ifstream in(f.path, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::ofstream out(sparse, std::ios::binary);
    out.seekp(1LL << 30);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  ref.file = sparse;
  ref.offset = 1ULL << 30;
  EXPECT_EQ(loaded(ref.view({0, 2}, {6, 2})), expectedBox({6, 8}, {0, 2}, {6, 2}));
  llvm::sys::fs::remove(sparse);
}

TEST(WeightStoreExternal, MissingFileAndBadView) {
  WeightRef ref;
  ref.type = TensorType{DType::F32, {2, 2}, true};
  ref.file = "/nonexistent/partita/w.data";
  ref.length = 16;
  WeightStore s;
  s.add("w", ref.view({0, 1}, {2, 1}));
  auto t = s.load("w");
  ASSERT_FALSE(static_cast<bool>(t));
  std::string msg = llvm::toString(t.takeError());
  EXPECT_NE(msg.find("weight 'w': cannot open external data file '/nonexistent/partita/w.data'"), std::string::npos)
      << msg;
  s.add("out", ref.view({1, 1}, {2, 1})); // rows 1..2 of a 2-row tensor
  auto out = s.load("out");
  ASSERT_FALSE(static_cast<bool>(out));
  EXPECT_NE(llvm::toString(out.takeError()).find("does not fit its stored tensor f32[2,2]"), std::string::npos);
}

TEST(WeightStoreExternal, LoadBoxIsAViewOfTheWeight) {
  ExternalFile f({6, 8});
  WeightStore s;
  s.add("t", f.ref.transposed({1, 0}).view({2, 0}, {4, 6})); // w.T[2:6]
  auto box = s.loadBox("t", {1, 2}, {2, 3});                  // w.T[3:5, 2:5] = w[2:5, 3:5].T
  ASSERT_TRUE(static_cast<bool>(box)) << llvm::toString(box.takeError());
  EXPECT_EQ(box->toDoubles(), expectedBox({6, 8}, {2, 3}, {3, 2}, {1, 0}));
  auto outside = s.loadBox("t", {3, 0}, {2, 6});
  ASSERT_FALSE(static_cast<bool>(outside));
  EXPECT_NE(llvm::toString(outside.takeError()).find("box outside the tensor f32[4,6]"), std::string::npos);
}

// A row shard is one run, a column shard one run per row.
TEST(WeightStore, BoxRuns) {
  auto runs = [](Shape shape, Shape start, Shape size) {
    std::vector<std::array<int64_t, 3>> r;
    llvm::cantFail(forEachBoxRun(shape, start, size, [&](int64_t boxFirst, int64_t first, int64_t n) -> llvm::Error {
      r.push_back({boxFirst, first, n});
      return llvm::Error::success();
    }));
    return r;
  };
  using R = std::vector<std::array<int64_t, 3>>;
  EXPECT_EQ(runs({4, 6}, {2, 0}, {2, 6}), (R{{0, 12, 12}}));
  EXPECT_EQ(runs({4, 6}, {0, 3}, {4, 3}), (R{{0, 3, 3}, {3, 9, 3}, {6, 15, 3}, {9, 21, 3}}));
  EXPECT_EQ(runs({2, 3, 4}, {0, 1, 0}, {2, 2, 4}), (R{{0, 4, 8}, {8, 16, 8}}));
  EXPECT_EQ(runs({}, {}, {}), (R{{0, 0, 1}}));
  EXPECT_EQ(runs({4, 6}, {0, 0}, {0, 6}), R{});
}

// ZeRO-3's flat parts: w = arange(24).reshape(4, 6) split on dim 1 into two
// [4, 3] blocks, each flattened row-major and padded to 14 elements; the
// expected buffers are written out from numpy's w[:, 0:3].flatten().
TEST(WeightStore, FlatPartsOfColumnBlocks) {
  WeightRef flat = inlineRef({4, 6}).flattened(/*dim=*/1, /*blocks=*/2, /*length=*/14);
  EXPECT_EQ(flat.type.shape, (Shape{28}));
  std::vector<double> block0{0, 1, 2, 6, 7, 8, 12, 13, 14, 18, 19, 20, 0, 0};
  std::vector<double> block1{3, 4, 5, 9, 10, 11, 15, 16, 17, 21, 22, 23, 0, 0};
  std::vector<double> whole = block0;
  whole.insert(whole.end(), block1.begin(), block1.end());
  WeightStore s;
  s.add("all", flat);
  EXPECT_EQ(s.load("all")->toDoubles(), whole);
  for (auto [start, count] : {std::pair<int64_t, int64_t>{5, 7}, {10, 8}, {14, 7}, {21, 7}, {12, 2}}) {
    s.add("part", flat.view({start}, {count}));
    auto t = s.load("part");
    ASSERT_TRUE(static_cast<bool>(t)) << llvm::toString(t.takeError());
    EXPECT_EQ(t->toDoubles(), std::vector<double>(whole.begin() + start, whole.begin() + start + count))
        << "elements " << start << ".." << start + count;
    EXPECT_EQ(flat.view({start}, {count}).unflattened().type.shape, (Shape{4, 6}));
  }
  s.add("past", flat.view({20}, {9}));
  EXPECT_FALSE(static_cast<bool>(s.load("past"))) << "a range past the buffer is an error";
}

// A part of a transposed weight's flat buffer, and one read from a file cut
// after the rows the part covers: only those rows are read.
TEST(WeightStoreExternal, FlatPartsReadOnlyTheirRows) {
  ExternalFile f({6, 8});
  std::vector<double> t = expectedBox({6, 8}, {0, 0}, {6, 8}, {1, 0}); // w.T flattened: [8, 6]
  WeightRef flatT = f.ref.transposed({1, 0}).flattened(/*dim=*/0, /*blocks=*/2, /*length=*/24);
  EXPECT_EQ(loaded(flatT.view({20}, {8})), (std::vector<double>{t[20], t[21], t[22], t[23], t[24], t[25], t[26], t[27]}));
  ExternalFile cut({6, 8}, /*garbage=*/40, /*keep=*/2 * 8 * 4);
  WeightRef flat = cut.ref.flattened(/*dim=*/0, /*blocks=*/1, /*length=*/48);
  std::vector<double> rows = expectedBox({6, 8}, {0, 0}, {2, 8});
  EXPECT_EQ(loaded(flat.view({3}, {10})), std::vector<double>(rows.begin() + 3, rows.begin() + 13));
}

// A copy of a store shares the table it was copied from (compile copies the
// model's table for every stage and rank program): it sees every weight the
// source had then, its own additions stay its own, and what the source adds
// later does not reach it; a copy of the copy sees both layers.
TEST(WeightStore, CopiesAreSnapshotsWithTheirOwnAdditions) {
  auto ref = [](int64_t n) {
    WeightRef r;
    r.type = TensorType{DType::F32, {n}, true};
    return r;
  };
  WeightStore source;
  source.add("a", ref(1));
  source.add("b", ref(2));
  WeightStore copy = source;
  source.add("later", ref(3));
  source.add("a", ref(4)); // replaced in the source after the copy
  copy.add("shard", ref(5));
  copy.add("b", ref(6)); // replaced in the copy
  ASSERT_TRUE(copy.find("a") && copy.find("b") && copy.find("shard"));
  EXPECT_EQ(copy.find("a")->type.shape, Shape{1});
  EXPECT_EQ(copy.find("b")->type.shape, Shape{6});
  EXPECT_EQ(copy.find("later"), nullptr);
  EXPECT_EQ(source.find("shard"), nullptr);
  EXPECT_EQ(source.find("a")->type.shape, Shape{4});
  EXPECT_EQ(source.find("b")->type.shape, Shape{2});
  WeightStore second = copy;
  copy.add("after", ref(7));
  ASSERT_TRUE(second.find("a") && second.find("b") && second.find("shard"));
  EXPECT_EQ(second.find("b")->type.shape, Shape{6});
  EXPECT_EQ(second.find("after"), nullptr);
  WeightStore assigned;
  assigned.add("gone", ref(8));
  assigned = source;
  EXPECT_EQ(assigned.find("gone"), nullptr);
  ASSERT_TRUE(assigned.find("later"));
}
