//===- WeightStore.h - weights held by reference --------------------------===//
//
// Initializers are not loaded at import. A WeightRef says where the bytes live
// (an external data file and offset, or a buffer already owned in memory, as
// for weights stored inside a small .onnx) and the bytes are read only when a
// pass or the exporter asks for them. A view or transpose of a weight is read
// box by box from where the bytes live: a rank's shard of a 10 GB weight
// reads (and holds) its shard, not the weight.
//
//===----------------------------------------------------------------------===//
#pragma once
#include "compiler/ir/Tensor.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Error.h"
#include <memory>
#include <optional>
#include <string>

namespace partita {

/// A weight as ZeRO-3 holds it: part of the flat, padded buffer of its
/// tensor-parallel blocks (compiler/ops/FlatShards.h, outer = 1). The weight
/// the rest of the WeightRef describes (`shape`) is split on `dim` into
/// `blocks` blocks, each flattened row-major and zero-padded to `length`
/// elements; the ref holds elements [start, start + type.shape[0]) of their
/// concatenation.
struct FlatPart {
  int64_t dim = 0, blocks = 1, length = 0, start = 0;
  Shape shape;
  /// Set when the ranks along mesh axis `byAxis` share one program and the
  /// part is theirs: `start` is coordinate 0's and a rank's part starts
  /// `stride` elements further per coordinate, placed as the program is
  /// loaded (ImportOptions::coordinates; localize's runtime-slices).
  std::string byAxis;
  int64_t stride = 0;
};

struct WeightRef {
  TensorType type;
  std::string file;     // external data file; empty when `inlineBytes` holds the data
  uint64_t offset = 0;
  uint64_t length = 0;
  std::shared_ptr<const std::vector<uint8_t>> inlineBytes;
  /// A box of the stored tensor (per-dim start; `type.shape` is its size):
  /// how a rank's shard or one of q/k/v of a fused projection refers to the
  /// original weight without copying it. Empty: the whole stored tensor.
  Shape viewStart;
  Shape storedShape; // shape of the bytes at file/inlineBytes when viewed or permuted
  /// Logical tensor = transpose(stored, perm) (a Gemm's transB folded into
  /// the reference); the view box applies to the logical tensor.
  std::vector<int64_t> perm;
  /// The model's initializer holding the bytes (views and transposes keep
  /// it): where `partita merge` writes a trained parameter back.
  std::string source;
  /// Set: the logical tensor is a 1-D part of this weight's flat buffer.
  std::optional<FlatPart> flat;
  /// Set: the logical tensor repeats each `block`-wide block along `dim` of
  /// the rest of the ref `times` times in a row (a key/value projection's
  /// heads, one copy per tensor-parallel rank that reads it:
  /// passes/ReplicateKvHeads.cpp). A view inside one copy is a plain view.
  struct Repeat {
    int64_t dim = 0, block = 1, times = 1;
  };
  std::optional<Repeat> repeat;
  /// Set: programs hold the weight in this type, its stored float32
  /// elements rounded to it as they are loaded (mixed precision's half
  /// parameters, passes/HalfParameters.cpp); `type` stays the stored one.
  std::optional<DType> loadAs;

  bool hasData() const { return inlineBytes || !file.empty(); }
  /// Whether the ranks holding parts of this weight along an axis can share
  /// one reference placed at load (FlatPart::byAxis): a 1-D part of a flat
  /// buffer (ZeRO's) in an external data file, read by reference; not of a
  /// repeated weight (whose parts are plain views).
  bool placeableAtLoad() const { return flat && !repeat && !file.empty(); }
  /// The type programs hold: `type` with loadAs's dtype.
  TensorType heldType() const { return TensorType{loadAs.value_or(type.dtype), type.shape, type.known}; }
  /// This weight restricted to `start` + `size` (relative to this view).
  WeightRef view(llvm::ArrayRef<int64_t> start, llvm::ArrayRef<int64_t> size) const;
  /// This weight with each `block`-wide block along `dim` repeated `times`
  /// times (Repeat).
  WeightRef repeated(int64_t dim, int64_t block, int64_t times) const;
  /// This weight transposed by `perm` (numpy.transpose; composes with an
  /// earlier transpose or view).
  WeightRef transposed(llvm::ArrayRef<int64_t> perm) const;
  /// This weight as the flat buffer of its `blocks` blocks along `dim`, each
  /// padded to `length` (FlattenShards with outer = 1). A view of the result
  /// is a range of the buffer; load() reads only the rows that range covers.
  WeightRef flattened(int64_t dim, int64_t blocks, int64_t length) const;
  /// The weight a flat ref is a part of (itself when not flat).
  WeightRef unflattened() const;
};

/// The stored name of a view of weight `base`: "base[a:b,c:d]" (numpy slice
/// bounds per dim). `partita merge` parses it back to write trained pieces
/// into their weight.
std::string weightViewName(llvm::StringRef base, llvm::ArrayRef<int64_t> start, llvm::ArrayRef<int64_t> size);
/// Inverse of weightViewName; false when `name` is not a view name.
bool parseWeightViewName(llvm::StringRef name, std::string &base, Shape &start, Shape &size);

/// Visits the box [start, start + size) of a row-major tensor of `shape` as
/// contiguous runs, in row-major order of the box: visit(boxFirst, first, n)
/// is a run of n elements starting at element `first` of the tensor and at
/// element `boxFirst` of the box. Trailing dims the box spans whole join the
/// run: a row shard is one run, a column shard one run per row. Stops at the
/// first error `visit` returns.
llvm::Error forEachBoxRun(llvm::ArrayRef<int64_t> shape, llvm::ArrayRef<int64_t> start, llvm::ArrayRef<int64_t> size,
                          llvm::function_ref<llvm::Error(int64_t boxFirst, int64_t first, int64_t n)> visit);

/// `file` made absolute, without . and .. components: how rank programs and
/// plan.json name a model's external data file.
std::string absoluteWeightFile(llvm::StringRef file);

/// A graph's weight references by name. Copying one is cheap: the copy
/// shares a frozen snapshot of the table (made once per table state) and
/// keeps its own additions apart, so the thousands of program copies a large
/// compile makes (a stage's, a rank's) do not each copy the model's table.
class WeightStore {
public:
  WeightStore() = default;
  WeightStore(const WeightStore &other);
  WeightStore &operator=(const WeightStore &other);
  WeightStore(WeightStore &&) = default;
  WeightStore &operator=(WeightStore &&) = default;
  void add(const std::string &name, WeightRef ref);
  const WeightRef *find(llvm::StringRef name) const;
  /// Reads (or shares) the weight's bytes. A view or transpose reads only
  /// the stored bytes its box covers (one file open, one read per contiguous
  /// run) and transposes them on the way in: memory is the result plus at most
  /// a 1 MiB buffer. Fails, naming the weight and the file, when the weight
  /// has no data (e.g. a graph parsed from IR text) or its file cannot be read.
  llvm::Expected<Tensor> load(llvm::StringRef name) const;
  /// The box [start, start + size) of the weight: load() of that view.
  llvm::Expected<Tensor> loadBox(llvm::StringRef name, llvm::ArrayRef<int64_t> start,
                                 llvm::ArrayRef<int64_t> size) const;

private:
  using Table = llvm::StringMap<WeightRef>;
  /// The shared snapshot and the additions since (own_ wins).
  std::shared_ptr<const Table> base_;
  Table own_;
  /// base_ and own_ merged, made by the first copy since the last add.
  mutable std::shared_ptr<const Table> frozen_;
  std::shared_ptr<const Table> snapshot() const;
};

} // namespace partita
