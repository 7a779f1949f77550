//===- Hostfile.h - hosts for a launch across machines ----------*- C++ -*-===//
//
// `partita launch --hostfile FILE` reads Open MPI's hostfile format (a host
// per line, `slots=N`, `#` comments; a host named twice adds its slots) and
// places the ranks host by host. A tensor-parallel group all-reduces in
// every layer, so it must not cross a host: each host takes whole groups
// (its slots rounded down to a multiple of tp), in rank order, which is the
// mesh's row-major order with tp innermost.
//===----------------------------------------------------------------------===//
#pragma once
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include <string>
#include <vector>

namespace partita {

struct HostSlots {
  std::string name;
  int slots = 1; // Open MPI's default for a line without slots=
};

/// The hosts of a hostfile's text, in order; errors name `path` and the line.
llvm::Expected<std::vector<HostSlots>> parseHostfile(llvm::StringRef text, llvm::StringRef path);

/// Ranks [first, first + count) run on `name`.
struct HostRanks {
  std::string name;
  int first = 0, count = 0;
};

/// `ranks` ranks placed host by host in whole groups of `tp` consecutive
/// ranks; hosts not needed are left out. The error says how many ranks the
/// hosts can take and why.
llvm::Expected<std::vector<HostRanks>> placeRanks(const std::vector<HostSlots> &hosts, int ranks, int tp,
                                                  llvm::StringRef path);

/// mpirun's --host value for a placement: "a:4,b:4".
std::string mpirunHosts(const std::vector<HostRanks> &placement);

/// "pa 0-1, pb 2-3": where each host's ranks run.
std::string describePlacement(const std::vector<HostRanks> &placement);

/// What one host's check found (a worker run with --check-host prints it as
/// one line; the launcher reads the lines back).
struct HostCheck {
  std::string host;
  std::string error;        // empty: the files are there
  bool statusDirSeen = true; // the launcher's rank-status folder is visible there
};
std::string formatHostCheck(const HostCheck &c);

/// Runs `checkCommand` (mpirun's prefix and a worker with --check-host) once
/// per host of `placement` and gathers what each found. An error names each
/// host whose check failed, or says why the checks could not run.
llvm::Expected<std::vector<HostCheck>> runHostChecks(std::vector<std::string> mpirunPrefix,
                                                      const std::vector<HostRanks> &placement,
                                                      const std::vector<std::string> &workerArgs);

/// Where the ranks of a launch run, from each rank's host name (rank order):
/// consecutive ranks on one host form one entry.
std::vector<HostRanks> placementOf(const std::vector<std::string> &hostOfRank);

} // namespace partita
