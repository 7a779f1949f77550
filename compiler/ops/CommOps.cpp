//===- CommOps.cpp - Partita's collective and resharding ops --------------===//
//
//   partita.Reshard(x)                          sharding change, still to be planned
//   partita.AllReduce(x...)  {axis, reduce, async}  Partial -> Replicated (reduce: "sum" or "max");
//                                               several operands: one bucket (coalesce-collectives),
//                                               result i is operand i reduced; async = 1: the
//                                               runtime may finish it as late as its first reader
//   partita.AllGather(x...)  {axis, dim}        Split(dim) -> Replicated; several 1-D operands
//                                               gathered on dim 0: one bucket (coalesce-collectives)
//   partita.ReduceScatter(x...) {axis, dim, async}  Partial -> Split(dim); several 1-D operands
//                                               split on dim 0: one bucket (coalesce-collectives)
//   partita.ShardSlice(x)    {axis, dim}        Replicated -> Split(dim), no communication
//   partita.SumCopies(x)     {axis, dim, block, copies, numel}  a repeated weight's copies summed
//                                               (replicate-kv-heads): below
//   partita.Send(x)          {axis, peer, tag}  sends x to pipeline stage `peer` of the group
//                                               along `axis` (its rank: peer mod the group's
//                                               size), message tag `tag`; returns a token
//                                               (f32[0]) the graph keeps as an output
//   partita.Recv()           {axis, peer, tag, dtype, shape}  receives that message: a value
//                                               of ONNX element type `dtype` and `shape`
//                                               (localize sets the rank's shape)
//
// In the global IR shapes are global, so every one of them keeps its operand's
// type. After localize the ops carry `parts` (the axis size) and their types
// are per-rank: AllGather multiplies `dim` by parts, ReduceScatter and
// ShardSlice divide it.
//===----------------------------------------------------------------------===//
#include "compiler/ops/OpRegistry.h"

namespace partita {

namespace {
/// Operand i's result type: its dimension `dim` scaled by `parts` (+1:
/// grows, -1: shrinks, 0: unchanged) once localize set parts.
llvm::Expected<TensorType> localType(const InferContext &c, size_t i, int scale) {
  TensorType t = c.type(i);
  int64_t parts = c.node.intAttr("parts", 0);
  if (parts <= 0 || scale == 0)
    return t;
  int64_t dim = normalizeAxis(c.node.intAttr("dim", 0), t.rank());
  if (dim < 0)
    return c.error("dim out of range");
  if (scale > 0)
    t.shape[dim] *= parts;
  else if (t.shape[dim] % parts != 0)
    return c.error("dimension " + llvm::Twine(t.shape[dim]) + " does not split into " + llvm::Twine(parts) +
                   " parts");
  else
    t.shape[dim] /= parts;
  return t;
}

OpInfo commOp(int scale, bool variadic = false) {
  return OpInfo{[scale](const InferContext &c, std::vector<TensorType> &o) -> llvm::Error {
                  for (size_t i = 0; i < c.types.size(); ++i) {
                    auto t = localType(c, i, scale);
                    if (!t)
                      return t.takeError();
                    o.push_back(*t);
                  }
                  return llvm::Error::success();
                },
                {}, 1, variadic ? -1 : 1};
}
} // namespace

void registerCommOps(OpRegistry &r) {
  r.add("partita.Reshard", commOp(0)).with(OpTrait::Reshards).exportedAs(OnnxForm::Lowered);
  r.add("partita.AllReduce", OpInfo{[](const InferContext &c, std::vector<TensorType> &o) -> llvm::Error {
                                      for (size_t i = 0; i < c.types.size(); ++i)
                                        o.push_back(c.type(i));
                                      return llvm::Error::success();
                                    },
                                    {}, 1, -1})
      .with(OpTrait::Collective | OpTrait::Reshards)
      .exportedAs(OnnxForm::Custom);
  // The copies of a repeated weight's blocks (replicate-kv-heads) summed:
  // along `dim`, each run of `copies` blocks `block` wide becomes their sum in
  // every block of the run. Split over tp (one block per rank) it is an
  // all-reduce over each run's ranks; `numel` is the whole value's size.
  r.add("partita.SumCopies", OpInfo{[](const InferContext &c, std::vector<TensorType> &o) -> llvm::Error {
                                      if (c.node.intAttr("copies", 0) < 1 || c.node.intAttr("block", 0) < 1)
                                        return c.error("needs positive attributes copies and block");
                                      o.push_back(c.type(0));
                                      return llvm::Error::success();
                                    },
                                    {}, 1, 1})
      .exportedAs(OnnxForm::Custom);
  r.add("partita.AllGather", commOp(+1, /*variadic=*/true)).with(OpTrait::Collective | OpTrait::Reshards).exportedAs(OnnxForm::Custom);
  r.add("partita.ReduceScatter", commOp(-1, /*variadic=*/true)).with(OpTrait::Collective | OpTrait::Reshards).exportedAs(OnnxForm::Custom);
  r.add("partita.ShardSlice", commOp(-1)).with(OpTrait::Reshards).exportedAs(OnnxForm::Custom);
  r.add("partita.Send", OpInfo{[](const InferContext &, std::vector<TensorType> &o) -> llvm::Error {
                                 o.push_back(TensorType{DType::F32, {0}, true});
                                 return llvm::Error::success();
                               },
                               {}, 1, 1})
      .with(OpTrait::Collective | OpTrait::SideEffects)
      .exportedAs(OnnxForm::Custom);
  r.add("partita.Recv", OpInfo{[](const InferContext &c, std::vector<TensorType> &o) -> llvm::Error {
                                 auto dtype = dtypeFromOnnx(static_cast<int>(c.node.intAttr("dtype", 0)));
                                 if (!dtype || !c.node.hasAttr("shape"))
                                   return c.error("needs attributes dtype (an ONNX element type) and shape");
                                 std::vector<int64_t> shape = c.node.intsAttr("shape");
                                 o.push_back(TensorType{*dtype, Shape(shape.begin(), shape.end()), true});
                                 return llvm::Error::success();
                               },
                               {}, 0, 0})
      .with(OpTrait::Collective | OpTrait::SideEffects)
      .exportedAs(OnnxForm::Custom);
}

} // namespace partita
