//===- Localize.cpp - localize pass ---------------------------------------===//
//
// Turns the sharded global graph into the program of one rank: every value
// gets its per-rank shape, weights become views of this rank's shard (no
// bytes are read), local slices become ONNX Slices with this rank's offsets,
// Reshape targets are rewritten to local shapes (heads/tp), vocab-parallel
// embedding lookups become masked lookups of this rank's rows, flat shard
// buffers hold the rank's own blocks, and collectives learn their group size. Slices along the
// axes of runtime-slices (compile: dp) stay partita.ShardSlice with their group size, taken at run
// time by the rank's place in the axis's group, and a flat weight part split over the axes of
// place-at-load is coordinate 0's, moved by the rank's coordinate as the program loads: the ranks
// along such axes then run the same program.
// The rank is given by its coordinates on
// every mesh axis (coords=dp:1,tp:0) or its row-major number (rank=k); a value
// split over several axes gets the block they index together. The result
// carries no shardings and no mesh: a plain ONNX program plus partita collectives.
//
//   %w = Weight() {name = "fc.w"} : f32[512,2048] {R,S(tp)}      (rank 1 of 2)
//     →  %w = Weight() {name = "fc.w"} : f32[512,1024]   (columns 1024..2047)
//===----------------------------------------------------------------------===//
#include "compiler/plan/Names.h"
#include "compiler/ops/ConstantEvaluator.h"
#include "compiler/ops/OpRegistry.h"
#include "passes/Passes.h"
#include "passes/sharding/Layout.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include <algorithm>
#include <set>

namespace partita {

namespace {

Value *i64Const(Graph &g, std::vector<int64_t> v, const std::string &name) {
  int64_t n = static_cast<int64_t>(v.size());
  return g.createConstant(Tensor::fromInts(DType::I64, {n}, v), name);
}

/// Option coords: axis:coordinate pairs (dp:1,tp:0), each coordinate >= 0.
Requirement<std::vector<std::string>> coordinatePairs() {
  return {"of axis:coordinate pairs (dp:1,tp:0)", [](const std::vector<std::string> &items) {
            for (const std::string &item : items) {
              auto [axis, c] = llvm::StringRef(item).split(':');
              int64_t k = 0;
              if (axis.trim().empty() || c.trim().getAsInteger(10, k) || k < 0)
                return false;
            }
            return true;
          }};
}

class Localize : public Pass {
public:
  llvm::StringRef name() const override { return "localize"; }

  llvm::Error run(Graph &g) override {
    if (g.mesh.empty())
      return passError(name(), "the graph has no mesh");
    if (auto err = resolveCoordinates(g.mesh))
      return err;
    mesh_ = g.mesh;
    std::vector<Node *> nodes = g.nodes();
    std::vector<std::pair<Value *, Sharding>> shardings;
    // 1. Per-rank types.
    auto localize = [&](Value *v) -> llvm::Error {
      if (v->sharding())
        if (auto err = v->sharding()->verify(g.mesh, v->type().shape))
          return passError(name(), "value %" + v->name() + ": " + llvm::toString(std::move(err)));
      shardings.push_back({v, v->sharding() ? *v->sharding() : Sharding::replicated(v->type().rank())});
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
    llvm::DenseMap<const Value *, Sharding> shardingOf(shardings.begin(), shardings.end());
    auto splitDim0 = [&](const Value *v) { return v && shardingOf.count(v) && !shardingOf[v].dims.empty() && !shardingOf[v].dims[0].empty(); };
    // 2. Rewrites.
    llvm::DenseMap<const Node *, std::vector<Node *>> sliceNodes; // a ShardSlice's replacement
    for (Node *n : nodes) {
      Sharding out = n->numOutputs() ? shardingOf.lookup(n->output()) : Sharding();
      if (n->is("Weight") && !out.dims.empty() && !out.isReplicated())
        shardWeight(g, n, out);
      else if (n->is("Recv", "partita")) // a pipeline receive of the rank's shard
        n->setAttr("shape", Attribute::ofInts({n->output()->type().shape.begin(), n->output()->type().shape.end()}));
      else if (n->is("ShardSlice", "partita") &&
               llvm::is_contained(runtimeSlices_.value(), n->stringAttr("axis", ""))) {
        if (auto err = runtimeSlice(n))
          return err;
      } else if (n->is("ShardSlice", "partita")) {
        if (auto err = localSlice(g, n, sliceNodes[n]))
          return err;
      } else if (n->is("AllReduce", "partita") || n->is("AllGather", "partita") || n->is("ReduceScatter", "partita")) {
        const MeshAxis *axis = g.mesh.find(n->stringAttr("axis", ""));
        if (!axis)
          return passError(name(), "node " + n->describe() + ": its axis '" + n->stringAttr("axis", "") +
                                       "' is not in " + g.mesh.str());
        n->setAttr("parts", Attribute::ofInt(axis->size));
      } else if ((n->is("Reshape") || n->is("Expand")) && n->input(1))
        n->setInput(1, g.createShapeConstant(n->output()->type().shape, n->output()->name() + ".shape"));
      else if (n->is("Gather") && splitDim0(n->input(0)) && !out.partial.empty())
        maskedGather(g, n, blockOffset(shardingOf.lookup(n->input(0)), 0, n->input(0)->type().shape[0]));
      else if (n->is("EmbeddingGrad", "partita") && splitDim0(n->output())) // this rank's block of rows
        n->setAttr("offset", Attribute::ofInt(blockOffset(out, 0, n->output()->type().shape[0])));
      else if (n->is("FlattenShards", "partita") || n->is("UnflattenShards", "partita"))
        localFlatShards(n, shardingOf.lookup(n->is("FlattenShards", "partita") ? n->input(0) : n->output()));
    }
    // A local slice runs where its ShardSlice did (the programs' order is
    // their memory plan's: ZeRO slices each weight's flat copy right after
    // making it), the other new nodes after everything (sorted in later).
    if (!sliceNodes.empty()) {
      std::vector<Node *> order;
      llvm::DenseSet<const Node *> placed;
      for (Node *n : nodes) {
        auto it = sliceNodes.find(n);
        for (Node *m : it != sliceNodes.end() ? it->second : std::vector<Node *>{n})
          if (!m->isErased() && placed.insert(m).second)
            order.push_back(m);
      }
      for (Node *n : g.nodes())
        if (placed.insert(n).second)
          order.push_back(n);
      g.setOrder(order);
      if (auto err = g.sortTopologically())
        return err;
    }
    g.mesh = Mesh();
    return llvm::Error::success();
  }

private:
  PassOption<int64_t> rank_{this, "rank", 0,
                            "the rank whose program to produce, row-major over the mesh (on a tp-only mesh, its tp "
                            "coordinate)",
                            atLeast<int64_t>(0)};
  PassOption<std::vector<std::string>> coordOption_{
      this, "coords", {}, "the rank's coordinate on every mesh axis (dp:1,tp:0), instead of rank", coordinatePairs()};
  Mesh mesh_;
  llvm::SmallVector<int64_t, 4> coords_; // this rank's coordinate on each mesh axis
  PassOption<std::vector<std::string>> runtimeSlices_{
      this,
      "runtime-slices",
      {},
      "the axes whose partita.ShardSlice nodes stay, taken at run time by the rank's place in the axis's group (the "
      "ranks along them share a program)"};
  PassOption<std::vector<std::string>> placeAtLoad_{
      this,
      "place-at-load",
      {},
      "the axes whose parts of flat weights read by reference are coordinate 0's, placed by the rank's coordinate as "
      "the program loads"};

  /// A slice the runtime takes (ShardSliceKernel.cpp): its group's size.
  llvm::Error runtimeSlice(Node *n) {
    const MeshAxis *axis = mesh_.find(n->stringAttr("axis", ""));
    if (!axis)
      return passError(name(), "node " + n->describe() + ": its axis '" + n->stringAttr("axis", "") +
                                   "' is not in " + mesh_.str());
    int64_t dim = n->intAttr("dim", 0), outer = n->intAttr("outer", 1), len = n->output()->type().shape[dim];
    if (outer < 1 || len % outer || n->input(0)->type().shape[dim] != len * axis->size)
      return passError(name(), "node " + n->describe() + ": its dimension " + llvm::Twine(dim) +
                                   " does not split into " + llvm::Twine(outer) + " x " + llvm::Twine(axis->size) +
                                   " blocks");
    n->setAttr("parts", Attribute::ofInt(axis->size));
    return llvm::Error::success();
  }

  /// The rank's coordinates from coords=..., else from rank=k (row-major over
  /// the mesh; on a tensor-parallel-only mesh, the tp coordinate).
  llvm::Error resolveCoordinates(const Mesh &mesh) {
    if (coordOption_.value().empty()) {
      if (rank_ >= mesh.numDevices())
        return passError(name(), "rank " + llvm::Twine(rank_) + " is outside " + mesh.str());
      coords_ = mesh.coordinates(rank_);
      return llvm::Error::success();
    }
    coords_.assign(mesh.axes.size(), -1);
    for (const std::string &item : coordOption_.value()) {
      auto [axisText, cText] = llvm::StringRef(item).split(':');
      std::string axis = axisText.trim().str();
      int64_t c = 0;
      cText.trim().getAsInteger(10, c); // checked as the option was parsed (coordinatePairs)
      const MeshAxis *a = mesh.find(axis);
      if (!a)
        return passError(name(), "coords: axis '" + axis + "' is not in " + mesh.str());
      size_t i = static_cast<size_t>(a - mesh.axes.data());
      if (coords_[i] >= 0)
        return passError(name(), "coords: axis '" + axis + "' is given twice");
      if (c >= a->size)
        return passError(name(), "coords: " + axis + ":" + llvm::Twine(c) + " is outside " + mesh.str());
      coords_[i] = c;
    }
    for (size_t i = 0; i < coords_.size(); ++i)
      if (coords_[i] < 0)
        return passError(name(), "coords: no coordinate for axis '" + mesh.axes[i].name + "' of " + mesh.str());
    return llvm::Error::success();
  }

  int64_t coordOf(llvm::StringRef axis) const {
    const MeshAxis *a = mesh_.find(axis);
    return a ? coords_[static_cast<size_t>(a - mesh_.axes.data())] : 0;
  }

  /// Start, in the global value, of this rank's block of dimension `dim`
  /// (local size `local`): the block index counts over the dimension's axes,
  /// major to minor.
  /// (`atZero`: an axis taken at coordinate 0, placed at load instead.)
  int64_t blockOffset(const Sharding &s, size_t dim, int64_t local, llvm::StringRef atZero = "") const {
    int64_t block = 0;
    if (dim < s.dims.size())
      for (const std::string &axis : s.dims[dim])
        block = block * mesh_.find(axis)->size + (axis == atZero ? 0 : coordOf(axis));
    return block * local;
  }

  /// Points the Weight node at this rank's shard (a view; several nodes may
  /// share one weight, so the shard gets its own name: w#shard1 for a split
  /// of dimension 1 over tp, w#shard0.dp_1 for dimension 0 over dp and 1 over tp).
  void shardWeight(Graph &g, Node *n, const Sharding &s) {
    std::string wname = n->stringAttr("name", "");
    std::string shard = wname + "#shard";
    bool first = true;
    for (size_t d = 0; d < s.dims.size(); ++d) {
      if (s.dims[d].empty())
        continue;
      shard += (first ? "" : "_") + std::to_string(d);
      first = false;
      if (s.dims[d].size() != 1 || s.dims[d][0] != mesh_axis::kTensor)
        for (const std::string &axis : s.dims[d])
          shard += "." + axis;
    }
    if (first)
      return; // partial only: the whole weight
    if (!g.weights.find(shard)) {
      const WeightRef *ref = g.weights.find(wname);
      Shape start(ref->type.shape.size(), 0);
      const Shape &local = n->output()->type().shape;
      // A flat part split over a place-at-load axis: coordinate 0's part,
      // which the loader moves by the rank's coordinate (FlatPart::byAxis).
      std::string byAxis;
      int64_t stride = 0;
      if (ref->placeableAtLoad() && !s.dims.empty())
        for (size_t k = 0; k < s.dims[0].size(); ++k)
          if (llvm::is_contained(placeAtLoad_.value(), s.dims[0][k])) {
            byAxis = s.dims[0][k];
            stride = local[0];
            for (size_t later = k + 1; later < s.dims[0].size(); ++later)
              stride *= mesh_.find(s.dims[0][later])->size;
          }
      for (size_t d = 0; d < start.size(); ++d)
        start[d] = blockOffset(s, d, local[d], byAxis);
      WeightRef part = ref->view(start, local);
      if (!byAxis.empty()) {
        part.flat->byAxis = byAxis;
        part.flat->stride = stride;
      }
      g.weights.add(shard, std::move(part));
    }
    n->setAttr("name", Attribute::ofString(shard));
  }

  /// A rank holds the blocks of its own shard only: with x split on `dim`
  /// over axes of `parts` ranks in all, `blocks` / parts of them (one, as
  /// ZeRO makes them), at their local shape.
  void localFlatShards(Node *n, const Sharding &x) {
    int64_t dim = n->intAttr("dim", 0), parts = 1;
    if (dim < 0)
      dim += static_cast<int64_t>(x.dims.size());
    if (dim >= 0 && static_cast<size_t>(dim) < x.dims.size())
      for (const std::string &axis : x.dims[static_cast<size_t>(dim)])
        parts *= mesh_.find(axis)->size;
    n->setAttr("blocks", Attribute::ofInt(n->intAttr("blocks", 1) / parts));
    if (n->is("UnflattenShards", "partita"))
      n->setAttr("shape", Attribute::ofInts({n->output()->type().shape.begin(), n->output()->type().shape.end()}));
  }

  /// A slice adds its axis as the minor-most split of its dimension: this
  /// rank's block within the block its operand holds. With an outer factor
  /// o the dimension is [o, rest] and the rank takes its block of `rest` in
  /// each of the o blocks: a strided slice, written as Reshape to
  /// [.., o, rest, ..], Slice of the inner dimension, Reshape back.
  llvm::Error localSlice(Graph &g, Node *n, std::vector<Node *> &made) {
    Value *in = n->input(0), *out = n->output();
    if (!mesh_.find(n->stringAttr("axis", "")))
      return passError(name(), "node " + n->describe() + ": its axis '" + n->stringAttr("axis", "") +
                                   "' is not in " + mesh_.str());
    int64_t dim = n->intAttr("dim", 0), outer = n->intAttr("outer", 1), len = out->type().shape[dim];
    const Shape &inShape = in->type().shape;
    if (outer < 1 || inShape[dim] % outer || len % outer)
      return passError(name(), "node " + n->describe() + ": outer factor " + llvm::Twine(outer) +
                                   " does not divide its dimension " + llvm::Twine(dim));
    int64_t part = len / outer, begin = coordOf(n->stringAttr("axis", "")) * part;
    auto typed = [&](Node *m, const Shape &shape) {
      // Its constant operands (made just before it) first, then the node.
      for (Value *operand : m->inputs())
        if (operand && operand->definingNode() && operand->definingNode()->is("Constant") &&
            std::find(made.begin(), made.end(), operand->definingNode()) == made.end())
          made.push_back(operand->definingNode());
      made.push_back(m);
      m->output()->type() = TensorType{out->type().dtype, shape, true};
      return m->output();
    };
    Value *src = in;
    int64_t sliceDim = dim;
    Shape blocked = inShape, cut = out->type().shape;
    if (outer != 1) { // [.., o, rest, ..]
      blocked[dim] = inShape[dim] / outer;
      blocked.insert(blocked.begin() + dim, outer);
      cut = blocked;
      cut[dim + 1] = part;
      src = typed(g.createNode("Reshape", {in, g.createShapeConstant(blocked, out->name() + ".blocks")},
                               {out->name() + ".blocks"}, "", n->name()),
                  blocked);
      sliceDim = dim + 1;
    }
    Node *s = g.createNode("Slice",
                           {src, i64Const(g, {begin}, out->name() + ".start"),
                            i64Const(g, {begin + part}, out->name() + ".end"),
                            i64Const(g, {sliceDim}, out->name() + ".axis")},
                           {outer != 1 ? out->name() + ".cut" : out->name()}, "", n->name());
    Value *local = typed(s, cut);
    if (outer != 1)
      local = typed(g.createNode("Reshape", {local, g.createShapeConstant(out->type().shape, out->name() + ".shape")},
                                 {out->name()}, "", n->name()),
                    out->type().shape);
    g.replaceAllUsesWith(out, local, /*takeName=*/true);
    g.eraseNode(n);
    return llvm::Error::success();
  }

  /// Gather(W[V/tp, d] of this rank, ids): rows outside this rank's block read
  /// as zeros, so the sum over ranks is the full lookup.
  void maskedGather(Graph &g, Node *n, int64_t row0) {
    Value *ids = n->input(1), *out = n->output();
    int64_t rows = n->input(0)->type().shape[0];
    std::string base = out->name();
    auto typed = [&](Node *m, DType t, const Shape &s) {
      m->output()->type() = TensorType{t, s, true};
      return m->output();
    };
    const Shape &idShape = ids->type().shape;
    DType it = ids->type().dtype;
    Value *lo = g.createConstant(Tensor::fromInts(it, {}, {row0}), base + ".row0");
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
          [] { return std::make_unique<Localize>(); }};
}

} // namespace partita
