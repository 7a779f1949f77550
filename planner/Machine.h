//===- Machine.h - what partita plan predicts for: devices and links ------===//
//
// A machine description: one device (dense matrix-product rate per dtype,
// the rate of everything else, memory bandwidth, memory), how many share a
// node, and the two links a collective or a pipeline send crosses (within a
// node, across nodes): bandwidth per device each way and latency (alpha-beta).
// Each rate comes with the fraction of it large kernels and collectives
// reach (`*_efficiency`), so a datasheet's peak stays the file's figure and
// what the prediction assumes is written beside it. JSON, one file per
// machine (planner/machines/*.json are bundled: `--machine a100-80gb`);
// `partita plan --calibrate` measures this machine and writes one.
//===----------------------------------------------------------------------===//
#pragma once
#include "compiler/ir/DType.h"
#include "llvm/Support/Error.h"
#include <map>
#include <string>
#include <vector>

namespace partita::planner {

struct Link {
  double bandwidth = 0;  // bytes/s per device, each way
  double latency = 0;    // seconds per message step (alpha)
  double efficiency = 1; // the share of `bandwidth` a ring collective reaches (bus bandwidth / peak)
  /// Measured links (--calibrate): the bus bandwidth reached by size, as
  /// (bytes a device moves in the collective, bytes/s) at increasing sizes.
  /// Empty: `bandwidth x efficiency` at every size (a datasheet's link).
  std::vector<std::pair<double, double>> measured;
  /// The bus bandwidth a collective moving `bytes` per device reaches: from
  /// `measured`, interpolated linearly in log(bytes) between its sizes and
  /// held at its ends; else bandwidth x efficiency.
  double rate(double bytes) const;
  /// Seconds to move `bytes` over `steps` message steps.
  double time(double bytes, double steps) const { return steps * latency + (bytes > 0 ? bytes / rate(bytes) : 0); }
};

struct Machine {
  std::string name;
  std::map<std::string, double> matmulFlops; // per dtype name ("fp32", "bf16", "fp16"): FLOP/s
  double vectorFlops = 0;      // elements/s of cheap elementwise and reduction work (an add, a multiply)
  double transcendentalFlops = 0; // elements/s of tanh, exp, erf, sqrt, division (default: vectorFlops / 4)
  double memoryBandwidth = 0;  // bytes/s
  double memoryBytes = 0;      // per device
  double matmulEfficiency = 1; // the share of the matmul rate large products reach
  double bandwidthEfficiency = 1;
  double kernelOverhead = 0;   // seconds a kernel costs beyond its work (launch, dispatch)
  /// The share of an overlapped collective's time (a gradient bucket's
  /// reduction during the backward) that computing beside it hides: 1 where
  /// something other than the compute cores moves the bytes (a GPU's NCCL
  /// beside its kernels), near 0 where the cores that compute also copy and
  /// add them (MPI's shared memory on a CPU). --calibrate measures it.
  double collectiveOverlap = 1;
  /// Whether a product of two half values seen through reshapes runs as a
  /// half GEMM (a GPU library reads the view as it is); Partita's CPU
  /// runtime fuses a widening only when the product reads it directly or
  /// through a transpose.
  bool halfGemmThroughReshapes = true;
  int devicesPerNode = 1;
  Link intraNode, interNode;
  std::vector<std::string> sources; // where each figure comes from

  /// The product rate for operands of `dtype` (bf16/fp16 at their rate,
  /// float32 at fp32's), efficiency applied.
  double matmulRate(DType dtype) const;
  double bandwidth() const { return memoryBandwidth * bandwidthEfficiency; }
};

/// The bundled descriptions' names (planner/machines/NAME.json).
std::vector<std::string> bundledMachines();
/// `spec` is a bundled name or a JSON file; errors name it and what is wrong.
llvm::Expected<Machine> loadMachine(const std::string &spec);
llvm::Expected<Machine> parseMachine(llvm::StringRef json, llvm::StringRef origin);
std::string machineJson(const Machine &m);

} // namespace partita::planner
