//===- TrafficReport.cpp --------------------------------------------------===//
#include "compiler/plan/Names.h"
#include "runtime/train/TrafficReport.h"
#include "llvm/Support/Format.h"
#include <algorithm>

namespace partita::rt {

void printTraffic(llvm::raw_ostream &os, const Session &session, int steps, double paramBytes) {
  os << "communication per step (rank " << session.rank() << ", bytes sent, ring cost):\n";
  for (const MeshAxis &a : session.plan().mesh.axes) {
    const Communicator *c = session.group(a.name);
    if (!c || a.size < 2)
      continue;
    const CommTraffic &t = c->traffic();
    double per = 1.0 / std::max(steps, 1);
    os << llvm::format("  %-3s (%lld ranks) %10.3f MB: all-reduce %.3f, reduce-scatter %.3f, all-gather %.3f, "
                       "other %.3f",
                       a.name.c_str(), static_cast<long long>(a.size), t.total() * per / 1e6,
                       t.allReduce * per / 1e6, t.reduceScatter * per / 1e6, t.allGather * per / 1e6,
                       t.other * per / 1e6);
    if (a.name == mesh_axis::kData && paramBytes > 0) {
      double ring = static_cast<double>(a.size - 1) / static_cast<double>(a.size);
      os << llvm::format(" = %.2f psi (psi: the ring's share of the parameters, %.3f MB)", t.total() * per /
                         (ring * paramBytes), ring * paramBytes / 1e6);
    }
    os << "\n";
  }
}

} // namespace partita::rt
