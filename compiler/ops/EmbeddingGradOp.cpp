//===- EmbeddingGradOp.cpp - partita.EmbeddingGrad ------------------------===//
//
// partita.EmbeddingGrad(table, ids, dy) {offset = 0} -> d_table
//   The gradient of Gather(table, ids) along axis 0 (an embedding lookup):
//   zeros shaped like `table`, then d_table[ids[i] - offset] += dy[i] for
//   every id in [offset, offset + rows) (a scatter-add; ids outside belong to
//   another rank's block of a vocabulary-parallel table and are skipped).
//   `table` only gives the result its shape (and, under sharding, its
//   layout); dy is ids.shape + [width].
// Written as one op instead of onehot(ids)ᵀ · dy, which for a 50k vocabulary
// would be a [tokens, 50k] one-hot and 2·tokens·50k·width flops per step.
//===----------------------------------------------------------------------===//
#include "compiler/ops/OpRegistry.h"

namespace partita {

void registerEmbeddingGradOp(OpRegistry &r) {
  r.add("partita.EmbeddingGrad",
        OpInfo{[](const InferContext &c, std::vector<TensorType> &o) -> llvm::Error {
                 const TensorType &table = c.type(0), &ids = c.type(1), &dy = c.type(2);
                 if (table.rank() != 2)
                   return c.error("the table must be 2-D, got " + table.str());
                 if (isFloat(ids.dtype))
                   return c.error("ids must be integers, got " + ids.str());
                 Shape want = ids.shape;
                 want.push_back(table.shape[1]);
                 if (dy.shape != want || dy.dtype != table.dtype)
                   return c.error("dy must be " + TensorType{table.dtype, want, true}.str() + ", got " + dy.str());
                 o.push_back(table);
                 return llvm::Error::success();
               },
               [](const Node &n, llvm::ArrayRef<Tensor> in) -> llvm::Expected<std::vector<Tensor>> {
                 const Shape &ts = in[0].shape();
                 int64_t rows = ts[0], width = ts[1], offset = n.intAttr("offset", 0);
                 std::vector<int64_t> ids = in[1].toInts();
                 std::vector<double> dy = in[2].toDoubles(), out(static_cast<size_t>(rows * width), 0.0);
                 for (size_t i = 0; i < ids.size(); ++i) {
                   int64_t row = ids[i] - offset;
                   if (row < 0 || row >= rows)
                     continue;
                   for (int64_t k = 0; k < width; ++k)
                     out[row * width + k] += dy[i * width + k];
                 }
                 return std::vector<Tensor>{Tensor::fromDoubles(in[0].dtype(), ts, out)};
               },
               3, 3})
      .exportedAs(OnnxForm::Function);
}

} // namespace partita
