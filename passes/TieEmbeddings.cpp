//===- TieEmbeddings.cpp - tie-embeddings pass ----------------------------===//
//
// Ties an output projection to the token embedding it was tied to in the
// model torch exported. torch.onnx writes a tied LM head (GPT-2, BERT's MLM
// decoder, T5) as a second initializer holding the embedding's transpose, or,
// unfolded, as a Transpose (Gemm transB) of the embedding itself, which
// fold-constants turns into a transposed view of it. Either way the graph
// then holds two weights, which training would update apart: not the model
// the user exported. This pass makes the head read Transpose(embedding), so
// there is one parameter, its gradient is the sum of both uses (autodiff adds
// them), and under tensor parallelism the head is split over the vocabulary
// exactly as the embedding is.
//
// A candidate is a 2-D float weight W [H, V] used only as a projection's
// weight (MatMul/Linear operand 1), and an embedding E [V, H] (the table of a
// Gather on axis 0 by non-constant indices) of the same dtype. They are tied
// when W is a transposed reference to E's bytes (the model's own tie, always
// kept), or, with by-value=1 (the default), when every element of W equals
// E's transpose bit for bit: 16 tiles spread over the table first (an untied
// head is rejected after about a million elements), then, for a head that
// matched them, the whole table in blocks of rows (memory: two blocks of at
// most 64 MiB), never a sample's guess. Tables over max-compare-kb (512 MiB)
// are not read whole by default, so compile time does not grow with the
// weights: such a head stays untied, marked `tie_suspected`, and compile says
// how to tie it (--tie-embeddings: no limit). The embedding's Weight node records the head's
// initializer in attribute `tied` so the plan, `inspect` and `partita merge`
// (which writes the trained embedding's transpose back into it) know.
//
//   %e = Weight() {name = "wte.weight"} : f32[64,32]
//   %w = Weight() {name = "onnx::MatMul_262"} : f32[32,64]   ; == transpose(%e)
//   %y = MatMul(%h, %w)
//     →  %t = Transpose(%e) {perm = [1, 0]};  %y = MatMul(%h, %t)
//        %e = Weight() {name = "wte.weight", tied = "onnx::MatMul_262"}
//===----------------------------------------------------------------------===//
#include "passes/TieEmbeddings.h"
#include "compiler/ops/OpRegistry.h"
#include "passes/Passes.h"
#include <algorithm>
#include <cstring>

namespace partita {

namespace {

bool isProjectionOperand(const Node &user, const Value *w) {
  return (user.is("MatMul") || user.is("Linear", "partita")) && user.input(1) == w && user.input(0) != w;
}

/// The embedding tables: Weights gathered on axis 0 by indices the program is given.
std::vector<Node *> embeddingTables(const Graph &g) {
  std::vector<Node *> tables;
  for (Node *n : g.nodes()) {
    if (!n->is("Gather") || n->intAttr("axis", 0) != 0 || constantValue(n->input(1)))
      continue;
    Node *w = n->input(0)->definingNode();
    if (w && w->is("Weight") && w->output()->type().rank() == 2 && isFloat(w->output()->type().dtype) &&
        std::find(tables.begin(), tables.end(), w) == tables.end())
      tables.push_back(w);
  }
  return tables;
}

/// `head` refers to the bytes of `table` transposed (a folded Transpose or transB).
bool isTransposedReference(const WeightRef &head, const WeightRef &table) {
  bool plainTable = table.viewStart.empty() && table.perm.empty();
  bool transposed = head.viewStart.empty() && head.perm == std::vector<int64_t>{1, 0};
  bool sameBytes = head.inlineBytes ? head.inlineBytes == table.inlineBytes
                                    : !head.file.empty() && head.file == table.file && head.offset == table.offset;
  return plainTable && transposed && sameBytes && head.storedShape == table.type.shape;
}

/// A box of the table, [rows, cols] at (row, col); the head's matching box is
/// its transpose.
struct Tile {
  int64_t row, col, rows, cols;
};

/// 16 tiles spread over the table (about a million elements): a different
/// head (the usual case) is rejected after reading them; the first is tiny.
std::vector<Tile> probeTiles(int64_t vocab, int64_t hidden) {
  std::vector<Tile> tiles{{0, 0, 1, std::min<int64_t>(hidden, 64)}};
  int64_t rows = std::min<int64_t>(vocab, 1024), cols = std::min<int64_t>(hidden, 256);
  for (int64_t k = 0; k < 16; ++k) // a diagonal-ish spread, both ends included
    tiles.push_back({(vocab - rows) * k / 15, (hidden - cols) * ((k * 7) % 16) / 15, rows, cols});
  return tiles;
}

/// e [rows, cols] == transpose(w [cols, rows]), in 64x64 blocks so both
/// sides stay in cache (a plain double loop strides one of them).
template <typename Word>
bool sameTransposed(const uint8_t *e, const uint8_t *w, int64_t rows, int64_t cols) {
  constexpr int64_t B = 64;
  for (int64_t h0 = 0; h0 < cols; h0 += B)
    for (int64_t v0 = 0; v0 < rows; v0 += B)
      for (int64_t h = h0; h < std::min(cols, h0 + B); ++h)
        for (int64_t v = v0; v < std::min(rows, v0 + B); ++v) {
          Word a, b;
          std::memcpy(&a, e + (v * cols + h) * sizeof(Word), sizeof(Word));
          std::memcpy(&b, w + (h * rows + v) * sizeof(Word), sizeof(Word));
          if (a != b)
            return false;
        }
  return true;
}

/// The table's box `t` equals the head's transposed box, bit for bit.
llvm::Expected<bool> tileMatches(const WeightStore &weights, const std::string &head, const std::string &table,
                                 const Tile &t, size_t elem) {
  auto e = weights.loadBox(table, {t.row, t.col}, {t.rows, t.cols});
  if (!e)
    return e.takeError();
  auto w = weights.loadBox(head, {t.col, t.row}, {t.cols, t.rows});
  if (!w)
    return w.takeError();
  switch (elem) {
  case 8: return sameTransposed<uint64_t>(e->data(), w->data(), t.rows, t.cols);
  case 4: return sameTransposed<uint32_t>(e->data(), w->data(), t.rows, t.cols);
  case 2: return sameTransposed<uint16_t>(e->data(), w->data(), t.rows, t.cols);
  default: return sameTransposed<uint8_t>(e->data(), w->data(), t.rows, t.cols);
  }
}

/// Every element of the table's probe tiles has the same bytes.
llvm::Expected<bool> probesConstant(const WeightStore &weights, const std::string &table, int64_t vocab,
                                    int64_t hidden, size_t elem) {
  std::vector<char> first;
  for (const Tile &t : probeTiles(vocab, hidden)) {
    auto e = weights.loadBox(table, {t.row, t.col}, {t.rows, t.cols});
    if (!e)
      return e.takeError();
    const char *bytes = reinterpret_cast<const char *>(e->data());
    size_t n = static_cast<size_t>(t.rows * t.cols);
    if (first.empty() && n)
      first.assign(bytes, bytes + elem);
    for (size_t i = 0; i < n; ++i)
      if (std::memcmp(bytes + i * elem, first.data(), elem) != 0)
        return false;
  }
  return true;
}

/// Every element of `head` [H, V] equals `table` [V, H] transposed: first the
/// probe tiles, then, when they all match, the whole table in blocks of rows
/// (memory: two blocks of at most 64 MiB; a tied table is read once, an
/// untied one is rejected after the probes).
/// `probedOnly` is set when the probes matched but the table is larger than
/// `maxCompareBytes` (0: no limit): nothing more is read and the answer is
/// false.
llvm::Expected<bool> equalsTranspose(const WeightStore &weights, const std::string &head, const std::string &table,
                                     const Shape &tableShape, DType dtype, uint64_t maxCompareBytes,
                                     bool &probedOnly) {
  int64_t vocab = tableShape[0], hidden = tableShape[1];
  size_t elem = dtypeSize(dtype);
  for (const Tile &t : probeTiles(vocab, hidden)) {
    auto same = tileMatches(weights, head, table, t, elem);
    if (!same || !*same)
      return same;
  }
  // A table whose probes hold one value throughout (an all-zero placeholder,
  // a constant init) equals the transpose of any head filled the same way:
  // that says nothing of a tie, and tying two such weights would train one
  // parameter where the model has two.
  auto constant = probesConstant(weights, table, vocab, hidden, elem);
  if (!constant || *constant)
    return constant ? llvm::Expected<bool>(false) : constant.takeError();
  if (maxCompareBytes && static_cast<uint64_t>(vocab * hidden) * elem > maxCompareBytes) {
    probedOnly = true;
    return false;
  }
  int64_t blockRows =
      std::max<int64_t>(1, (int64_t{64} << 20) / std::max<int64_t>(1, hidden * static_cast<int64_t>(elem)));
  for (int64_t v0 = 0; v0 < vocab; v0 += blockRows) {
    auto same = tileMatches(weights, head, table, {v0, 0, std::min(blockRows, vocab - v0), hidden}, elem);
    if (!same || !*same)
      return same;
  }
  return true;
}

class TieEmbeddings : public Pass {
public:
  llvm::StringRef name() const override { return "tie-embeddings"; }

  llvm::Error run(Graph &g) override {
    std::vector<Node *> tables = embeddingTables(g);
    if (tables.empty())
      return llvm::Error::success();
    for (Node *w : g.nodes()) {
      if (!w->is("Weight") || w->output()->type().rank() != 2 || w->output()->users().empty() ||
          g.isGraphOutput(w->output()))
        continue;
      const Value *wv = w->output();
      if (!std::all_of(wv->users().begin(), wv->users().end(),
                       [&](const Node *u) { return isProjectionOperand(*u, wv); }))
        continue;
      for (Node *e : tables) {
        auto tied = sameParameter(g, *w, *e, byValue_);
        if (!tied)
          return passError(name(), llvm::toString(tied.takeError()));
        if (*tied) {
          tie(g, w, e);
          break;
        }
      }
    }
    return g.sortTopologically();
  }

private:
  PassOption<bool> byValue_{this, "by-value", true,
                            "also tie a head that is a separate initializer equal to the transpose (0: only a head "
                            "that refers to the embedding's own bytes, which is one weight in the model itself)"};
  PassOption<int64_t> maxCompareKb_{this, "max-compare-kb", 512 << 10,
                                    "a table larger than this (KiB) whose head matches the probes is not compared "
                                    "whole and stays untied (attribute tie_suspected names the head); 0: no limit",
                                    atLeast<int64_t>(0)};

  llvm::Expected<bool> sameParameter(const Graph &g, const Node &head, const Node &table, bool byValue) {
    const TensorType &ht = head.output()->type(), &tt = table.output()->type();
    if (&head == &table || ht.dtype != tt.dtype || ht.shape != Shape{tt.shape[1], tt.shape[0]})
      return false;
    std::string headName = head.stringAttr("name", ""), tableName = table.stringAttr("name", "");
    const WeightRef *hr = g.weights.find(headName), *tr = g.weights.find(tableName);
    if (!hr || !tr || !hr->hasData() || !tr->hasData())
      return false; // no bytes to compare (a graph parsed from text): left as it is
    if (isTransposedReference(*hr, *tr))
      return true;
    if (!byValue || !hr->viewStart.empty() || !hr->perm.empty() || !tr->viewStart.empty() || !tr->perm.empty())
      return false;
    bool probedOnly = false;
    auto same = equalsTranspose(g.weights, headName, tableName, tt.shape, tt.dtype,
                                static_cast<uint64_t>(maxCompareKb_) << 10, probedOnly);
    if (same && probedOnly) // said by compile: a likely tie left untied
      const_cast<Node &>(table).setAttr("tie_suspected", Attribute::ofString(headName));
    return same;
  }

  static void tie(Graph &g, Node *head, Node *table) {
    Value *e = table->output();
    Node *t = g.createNode("Transpose", {e}, {e->name() + ".T"}, "", head->stringAttr("name", "") + ".tied");
    t->setAttr("perm", Attribute::ofInts({1, 0}));
    t->output()->type() = head->output()->type();
    std::string prior = table->stringAttr("tied", "");
    std::string headName = head->stringAttr("name", "");
    table->setAttr("tied", Attribute::ofString(prior.empty() ? headName : prior + "," + headName));
    g.replaceAllUsesWith(head->output(), t->output());
    g.eraseNode(head);
  }
};

} // namespace

std::vector<std::string> tiedHeadNames(const Node &table) {
  std::string tied = table.stringAttr("tied", "");
  llvm::SmallVector<llvm::StringRef, 2> heads;
  llvm::StringRef(tied).split(heads, ',', -1, /*KeepEmpty=*/false);
  return std::vector<std::string>(heads.begin(), heads.end());
}

PassInfo tieEmbeddingsPass() {
  return {"tie-embeddings", "Tie an output projection equal to an embedding's transpose to that embedding",
          "Rewrites a projection weight W [H,V] that is bit for bit the transpose of an embedding table E "
          "[V,H] (or a transposed reference to its bytes) into Transpose(E), so training has one parameter "
          "with the summed gradient, as the exported model does; records the head's initializer in E's "
          "attribute `tied`. Probes 16 tiles, then compares a matching table whole, in blocks.",
          [] { return std::make_unique<TieEmbeddings>(); }};
}

} // namespace partita
