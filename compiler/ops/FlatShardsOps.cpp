//===- FlatShardsOps.cpp - partita.FlattenShards / UnflattenShards --------===//
//
// The flat, padded buffers of ZeRO (compiler/ops/FlatShards.h):
//   partita.FlattenShards(x) {dim, blocks, outer, length} -> [blocks·length]
//   partita.UnflattenShards(y) {dim, blocks, outer, shape} -> shape
// x's dimension `dim` must divide into outer·blocks equal parts and each
// block fit in `length`; the padding is zeros.
//===----------------------------------------------------------------------===//
#include "compiler/ops/FlatShards.h"
#include "compiler/ops/OpRegistry.h"
#include <cstring>
#include <memory>

namespace partita {

namespace {

llvm::Expected<FlatShardsLayout> layoutOf(const InferContext *c, const Node &n, const Shape &shape, int64_t length) {
  FlatShardsLayout l{n.intAttr("dim", 0), n.intAttr("blocks", 1), n.intAttr("outer", 1), length};
  auto error = [&](const llvm::Twine &msg) -> llvm::Error {
    if (c)
      return c->error(msg);
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "node " + n.describe() + ": " + msg);
  };
  int64_t rank = static_cast<int64_t>(shape.size());
  if (l.blocks < 1 || l.outer < 1)
    return error("blocks and outer must be >= 1");
  if (rank == 0) {
    if (l.blocks != 1 || l.outer != 1)
      return error("a scalar has one block");
    l.dim = 0;
  } else {
    l.dim = normalizeAxis(l.dim, rank);
    if (l.dim < 0)
      return error("dim is outside the rank-" + llvm::Twine(rank) + " tensor");
    if (shape[static_cast<size_t>(l.dim)] % (l.blocks * l.outer) != 0)
      return error("dimension " + llvm::Twine(l.dim) + " (" + llvm::Twine(shape[static_cast<size_t>(l.dim)]) +
                   ") does not divide into " + llvm::Twine(l.outer) + " x " + llvm::Twine(l.blocks) + " blocks");
  }
  if (l.length * l.blocks < numElements(shape))
    return error("a block of " + llvm::Twine(numElements(shape) / l.blocks) + " elements is longer than length " +
                 llvm::Twine(l.length));
  return l;
}

int64_t lengthAttr(const Node &n) { return n.intAttr("length", 0); }

} // namespace

void registerFlatShardsOps(OpRegistry &r) {
  r.add("partita.FlattenShards",
        OpInfo{[](const InferContext &c, std::vector<TensorType> &o) -> llvm::Error {
                 const TensorType &x = c.type(0);
                 auto l = layoutOf(&c, c.node, x.shape, lengthAttr(c.node));
                 if (!l)
                   return l.takeError();
                 o.push_back(TensorType{x.dtype, {l->blocks * l->length}, true});
                 return llvm::Error::success();
               },
               [](const Node &n, llvm::ArrayRef<Tensor> in) -> llvm::Expected<std::vector<Tensor>> {
                 auto l = layoutOf(nullptr, n, in[0].shape(), lengthAttr(n));
                 if (!l)
                   return l.takeError();
                 size_t e = dtypeSize(in[0].dtype());
                 auto bytes = std::make_shared<std::vector<uint8_t>>(static_cast<size_t>(l->blocks * l->length) * e);
                 forEachShardRun(in[0].shape(), *l, [&](int64_t, int64_t x, int64_t f, int64_t count) {
                   std::memcpy(bytes->data() + f * e, in[0].data() + x * e, static_cast<size_t>(count) * e);
                 });
                 return std::vector<Tensor>{Tensor(in[0].dtype(), {l->blocks * l->length}, std::move(bytes))};
               },
               1, 1})
      .exportedAs(OnnxForm::Custom);
  r.add("partita.UnflattenShards",
        OpInfo{[](const InferContext &c, std::vector<TensorType> &o) -> llvm::Error {
                 const TensorType &y = c.type(0);
                 std::vector<int64_t> dims = c.node.intsAttr("shape");
                 Shape shape(dims.begin(), dims.end());
                 int64_t blocks = c.node.intAttr("blocks", 1);
                 if (y.rank() != 1 || blocks < 1 || y.shape[0] % blocks != 0)
                   return c.error("the flat input must be 1-D and divide into `blocks` buffers, got " + y.str());
                 auto l = layoutOf(&c, c.node, shape, y.shape[0] / blocks);
                 if (!l)
                   return l.takeError();
                 o.push_back(TensorType{y.dtype, shape, true});
                 return llvm::Error::success();
               },
               [](const Node &n, llvm::ArrayRef<Tensor> in) -> llvm::Expected<std::vector<Tensor>> {
                 std::vector<int64_t> dims = n.intsAttr("shape");
                 Shape shape(dims.begin(), dims.end());
                 int64_t blocks = std::max<int64_t>(1, n.intAttr("blocks", 1));
                 auto l = layoutOf(nullptr, n, shape, in[0].shape()[0] / blocks);
                 if (!l)
                   return l.takeError();
                 size_t e = dtypeSize(in[0].dtype());
                 auto bytes = std::make_shared<std::vector<uint8_t>>(static_cast<size_t>(numElements(shape)) * e);
                 forEachShardRun(shape, *l, [&](int64_t, int64_t x, int64_t f, int64_t count) {
                   std::memcpy(bytes->data() + x * e, in[0].data() + f * e, static_cast<size_t>(count) * e);
                 });
                 return std::vector<Tensor>{Tensor(in[0].dtype(), shape, std::move(bytes))};
               },
               1, 1})
      .exportedAs(OnnxForm::Custom);
}

} // namespace partita
