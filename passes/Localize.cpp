//===- Localize.cpp - localize pass ---------------------------------------===//
//
// Turns the sharded global graph into the program of one rank: every value
// gets its per-rank shape, weights become views of this rank's shard (no
// bytes are read), local slices become ONNX Slices with this rank's offsets,
// Reshape targets are rewritten to local shapes (heads/tp), vocab-parallel
// embedding lookups become masked lookups of this rank's rows, and
// collectives learn their group size. The result carries no shardings and no
// mesh: it is a plain ONNX program plus partita collectives.
//
//   %w = Weight() {name = "fc.w"} : f32[512,2048] {R,S(tp)}      (rank 1 of 2)
//     →  %w = Weight() {name = "fc.w"} : f32[512,1024]   (columns 1024..2047)
//===----------------------------------------------------------------------===//
#include "compiler/ops/ConstantEvaluator.h"
#include "compiler/ops/OpRegistry.h"
#include "passes/Passes.h"
#include "passes/sharding/Layout.h"

namespace partita {

namespace {

Value *i64Const(Graph &g, std::vector<int64_t> v, const std::string &name) {
  int64_t n = static_cast<int64_t>(v.size());
  return g.createConstant(Tensor::fromInts(DType::I64, {n}, v), name);
}

class Localize : public Pass {
public:
  llvm::StringRef name() const override { return "localize"; }

  llvm::Error setOption(llvm::StringRef key, llvm::StringRef value) override {
    if (key == "rank") {
      if (value.getAsInteger(10, rank_) || rank_ < 0)
        return passError(name(), "option rank expects a non-negative integer, got '" + value + "'");
      return llvm::Error::success();
    }
    return Pass::setOption(key, value);
  }

  llvm::Error run(Graph &g) override {
    if (g.mesh.empty())
      return passError(name(), "the graph has no mesh");
    if (rank_ >= g.mesh.numDevices())
      return passError(name(), "rank " + llvm::Twine(rank_) + " is outside " + g.mesh.str());
    axis_ = g.mesh.axes.back().name;
    parts_ = g.mesh.axes.back().size;
    coord_ = rank_ % parts_;
    std::vector<Node *> nodes = g.nodes();
    std::vector<std::pair<Value *, Layout>> layouts;
    // 1. Per-rank types.
    auto localize = [&](Value *v) -> llvm::Error {
      if (v->sharding())
        if (auto err = v->sharding()->verify(g.mesh, v->type().shape))
          return passError(name(), "value %" + v->name() + ": " + llvm::toString(std::move(err)));
      layouts.push_back({v, layoutOf(v, axis_)});
      if (v->sharding())
        v->type().shape = v->sharding()->localShape(g.mesh, v->type().shape);
      v->sharding().reset();
      return llvm::Error::success();
    };
    for (Value *in : g.inputs())
      if (auto err = localize(in))
        return err;
    for (Node *n : nodes)
      for (Value *out : n->outputs())
        if (auto err = localize(out))
          return err;
    llvm::DenseMap<const Value *, Layout> layoutMap(layouts.begin(), layouts.end());
    // 2. Rewrites.
    for (Node *n : nodes) {
      Layout outLayout = n->numOutputs() ? layoutMap.lookup(n->output()) : Layout();
      if (n->is("Weight") && outLayout.dim >= 0)
        shardWeight(g, n, outLayout.dim);
      else if (n->is("ShardSlice", "partita")) {
        if (n->intAttr("outer", 1) != 1)
          return passError(name(), "node " + n->describe() + ": a strided local slice (outer factor) is not supported");
        localSlice(g, n);
      }
      else if (n->is("AllReduce", "partita") || n->is("AllGather", "partita") || n->is("ReduceScatter", "partita"))
        n->setAttr("parts", Attribute::ofInt(parts_));
      else if ((n->is("Reshape") || n->is("Expand")) && n->input(1))
        n->setInput(1, i64Const(g, std::vector<int64_t>(n->output()->type().shape.begin(),
                                                        n->output()->type().shape.end()),
                                n->output()->name() + ".shape"));
      else if (n->is("Gather") && layoutMap.lookup(n->input(0)).dim == 0 && outLayout.partial)
        maskedGather(g, n);
      else if (n->is("EmbeddingGrad", "partita") && outLayout.dim == 0) // this rank's block of rows
        n->setAttr("offset", Attribute::ofInt(offset(n->output()->type().shape[0])));
    }
    g.mesh = Mesh();
    return llvm::Error::success();
  }

private:
  int64_t rank_ = 0, parts_ = 1, coord_ = 0;
  std::string axis_;

  /// Start of this rank's block of a dimension whose local size is `local`.
  int64_t offset(int64_t local) const { return coord_ * local; }

  /// Points the Weight node at this rank's shard (a view; several nodes may
  /// share one weight, so the shard gets its own name).
  void shardWeight(Graph &g, Node *n, int64_t dim) {
    std::string wname = n->stringAttr("name", "");
    std::string shard = wname + "#shard" + std::to_string(dim);
    if (!g.weights.find(shard)) {
      const WeightRef *ref = g.weights.find(wname);
      Shape start(ref->type.shape.size(), 0);
      const Shape &local = n->output()->type().shape;
      start[dim] = offset(local[dim]);
      g.weights.add(shard, ref->view(start, local));
    }
    n->setAttr("name", Attribute::ofString(shard));
  }

  void localSlice(Graph &g, Node *n) {
    Value *in = n->input(0), *out = n->output();
    int64_t dim = n->intAttr("dim", 0), len = out->type().shape[dim];
    Node *s = g.createNode("Slice",
                           {in, i64Const(g, {offset(len)}, out->name() + ".start"),
                            i64Const(g, {offset(len) + len}, out->name() + ".end"), i64Const(g, {dim}, out->name() + ".axis")},
                           {out->name()}, "", n->name());
    s->output()->type() = out->type();
    g.replaceAllUsesWith(out, s->output(), /*takeName=*/true);
    g.eraseNode(n);
  }

  /// Gather(W[V/tp, d] of this rank, ids): rows outside this rank's block read
  /// as zeros, so the sum over ranks is the full lookup.
  void maskedGather(Graph &g, Node *n) {
    Value *ids = n->input(1), *out = n->output();
    int64_t rows = n->input(0)->type().shape[0];
    std::string base = out->name();
    auto typed = [&](Node *m, DType t, const Shape &s) {
      m->output()->type() = TensorType{t, s, true};
      return m->output();
    };
    const Shape &idShape = ids->type().shape;
    DType it = ids->type().dtype;
    Value *lo = g.createConstant(Tensor::fromInts(it, {}, {offset(rows)}), base + ".row0");
    Value *local = typed(g.createNode("Sub", {ids, lo}, {base + ".local_ids"}), it, idShape);
    Value *zero = g.createConstant(Tensor::fromInts(it, {}, {0}), base + ".zero_id");
    Value *count = g.createConstant(Tensor::fromInts(it, {}, {rows}), base + ".rows");
    Value *below = typed(g.createNode("Less", {local, zero}, {base + ".below"}), DType::Bool, idShape);
    Value *above = typed(g.createNode("GreaterOrEqual", {local, count}, {base + ".above"}), DType::Bool, idShape);
    Value *outside = typed(g.createNode("Or", {below, above}, {base + ".outside"}), DType::Bool, idShape);
    Value *safe = typed(g.createNode("Where", {outside, zero, local}, {base + ".safe_ids"}), it, idShape);
    n->setInput(1, safe);
    Shape maskShape = idShape;
    maskShape.push_back(1);
    Value *axes = i64Const(g, {-1}, base + ".mask_axis");
    Value *mask = typed(g.createNode("Unsqueeze", {outside, axes}, {base + ".mask"}), DType::Bool, maskShape);
    DType ot = out->type().dtype;
    Value *zeros = g.createConstant(Tensor::fromDoubles(ot, {}, {0.0}), base + ".zero");
    Node *w = g.createNode("Where", {mask, zeros, out}, {base + ".masked"});
    w->output()->type() = out->type();
    // Every use of the lookup now reads the masked value.
    std::vector<Node *> users = out->users();
    for (Node *u : users)
      if (u != w)
        for (size_t i = 0; i < u->numInputs(); ++i)
          if (u->input(i) == out)
            u->setInput(i, w->output());
    if (g.isGraphOutput(out))
      g.replaceGraphOutput(out, w->output());
  }
};

} // namespace

PassInfo localizePass() {
  return {"localize", "Rewrite the sharded graph into one rank's program",
          "Per-rank shapes, weight shards as views, local slices, local Reshape targets, masked "
          "vocab-parallel lookups, collective group sizes; drops shardings and the mesh.",
          "rank=int (0): the rank whose program to produce",
          [] { return std::make_unique<Localize>(); }};
}

} // namespace partita
