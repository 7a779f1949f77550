//===- Sharding.h - device mesh and per-value sharding --------------------===//
//
// A Mesh names the axes of the device grid (`mesh<dp=2, tp=2>`). A Sharding
// says, for each tensor dimension, which mesh axes split it (empty = R), and
// over which axes the value is a partial sum (or max) still to be reduced. Shapes in the
// IR stay global; local shapes are derived from the sharding.
//
//===----------------------------------------------------------------------===//
#pragma once
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include <string>

namespace partita {

struct MeshAxis {
  std::string name;
  int64_t size = 1;
};

struct Mesh {
  llvm::SmallVector<MeshAxis, 4> axes;

  bool empty() const { return axes.empty(); }
  const MeshAxis *find(llvm::StringRef name) const;
  int64_t numDevices() const;
  std::string str() const; // "mesh<dp=2, tp=2>"
  bool operator==(const Mesh &o) const;

  // Ranks are the mesh's coordinates laid out row-major, the first axis major:
  // rank = sum_i coord_i * prod_{j>i} size_j (mesh<dp=2, tp=2>: rank 2 is dp=1, tp=0).
  /// The coordinates of `rank`, one per axis in axis order.
  llvm::SmallVector<int64_t, 4> coordinates(int64_t rank) const;
  int64_t rankOf(llvm::ArrayRef<int64_t> coords) const;
  /// The ranks a collective over `axis` joins `rank` with: those sharing its
  /// other coordinates, in the order of their `axis` coordinate.
  llvm::SmallVector<int64_t, 8> group(int64_t rank, llvm::StringRef axis) const;
};

struct Sharding {
  /// dims[i] lists the mesh axes splitting dimension i, major to minor.
  llvm::SmallVector<llvm::SmallVector<std::string, 1>, 4> dims;
  /// outer[i] > 1 when dimension i is [outer, rest] and the split applies to
  /// `rest` inside every outer block (heads merged into a batch dimension:
  /// [B*H] split by heads). Printed S(tp,outer=2). Empty means all 1.
  llvm::SmallVector<int64_t, 4> outer;
  int64_t outerOf(size_t dim) const { return dim < outer.size() ? outer[dim] : 1; }
  llvm::SmallVector<std::string, 1> partial;
  /// The partial values are per-rank maxima to be reduced by max (a
  /// vocab-parallel softmax's running max), not summands. Printed partial_max(tp).
  bool partialMax = false;

  static Sharding replicated(size_t rank);
  bool isReplicated() const;
  std::string str() const; // "{R,S(tp)} partial(dp)"
  bool operator==(const Sharding &o) const {
    if (dims != o.dims || partial != o.partial || (!partial.empty() && partialMax != o.partialMax))
      return false;
    for (size_t i = 0; i < dims.size(); ++i)
      if (outerOf(i) != o.outerOf(i))
        return false;
    return true;
  }
  bool operator!=(const Sharding &o) const { return !(*this == o); }

  /// Checks the sharding against a mesh and a global shape: known axes, each
  /// axis used once, split dimensions divisible by the product of their axes.
  llvm::Error verify(const Mesh &mesh, llvm::ArrayRef<int64_t> shape) const;
  /// Per-rank shape of a value with this sharding.
  llvm::SmallVector<int64_t, 4> localShape(const Mesh &mesh, llvm::ArrayRef<int64_t> shape) const;
};

} // namespace partita
