//===- ProgramTime.h - what one rank's program costs on a machine ---------===//
//
// A local program's time from its nodes (passes/StageCost.h's counts) on a
// machine description's rates:
//   products     (MatMul, partita.Linear, Gemm) max(FLOP / the matmul rate of
//                their operands' dtype, bytes / memory bandwidth);
//   the rest     max(elements written / the vector rate, bytes / bandwidth),
//                where a chain of elementwise nodes is one pass (what a fusing
//                runtime does: only values read outside the chain, or made
//                outside it, move); reshapes and constants are free;
//   collectives  alpha-beta on the link their mesh axis crosses (within a
//                node when the axis's ranks are), ring algorithms: the bytes
//                each rank sends (all-reduce 2(n-1)/n of the buffer,
//                all-gather and reduce-scatter (n-1)/n) over the link's
//                bandwidth, plus 2(n-1) or (n-1) latencies;
//   sends        partita.Send bytes, timed by the pipeline simulation on the
//                pipeline axis's link; the kernels after the last send, in
//                the program's order (the runtime's), run while it travels.
// Each kernel adds the device's launch overhead.
//===----------------------------------------------------------------------===//
#pragma once
#include "compiler/ir/Graph.h"
#include "planner/Machine.h"
#include <map>
#include <string>

namespace partita::planner {

/// Which link each mesh axis's collectives cross. Ranks are laid out with the
/// mesh's last axis fastest (tp innermost); a node holds devicesPerNode
/// consecutive ranks.
class AxisLinks {
public:
  AxisLinks(const Mesh &mesh, const Machine &machine);
  const Link &link(llvm::StringRef axis) const;
  bool withinNode(llvm::StringRef axis) const;
  int64_t size(llvm::StringRef axis) const;

private:
  const Machine &machine_;
  std::map<std::string, std::pair<int64_t, bool>> axes_; // name -> (size, within a node)
};

struct ProgramTime {
  double compute = 0;          // seconds in kernels (products and the rest)
  double productFlops = 0;     // FLOP in products
  double sendBytes = 0;        // partita.Send bytes per run
  /// Of `compute`, the kernels after the program's last partita.Send: a
  /// backward sends its input's gradient as soon as it is computed and its
  /// weights' gradients follow while the previous stage goes on.
  double computeAfterSend = 0;
  int kernels = 0;
  std::map<std::string, double> byOp; // kernel seconds per op type (a fused chain under its last op)
  std::map<std::string, double> collectives; // seconds per mesh axis
  std::map<std::string, double> reductions;  // of which all-reduces and reduce-scatters
  double collectiveTime(llvm::StringRef axis) const {
    auto it = collectives.find(axis.str());
    return it == collectives.end() ? 0 : it->second;
  }
  double reductionTime(llvm::StringRef axis) const {
    auto it = reductions.find(axis.str());
    return it == reductions.end() ? 0 : it->second;
  }
  double total() const {
    double t = compute;
    for (const auto &kv : collectives)
      t += kv.second;
    return t;
  }
};

ProgramTime programTime(const Graph &g, const Machine &machine, const AxisLinks &links);

/// Seconds for collective node `n` (a partita collective with "parts" and
/// "axis") on its axis's link.
double collectiveTime(const Node &n, const AxisLinks &links);

} // namespace partita::planner
