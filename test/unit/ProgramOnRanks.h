//===- ProgramOnRanks.h - one IR program run by mock ranks ----------------===//
//
// The set-up the multi-rank program tests share: every rank of a MockWorld
// (threads) parses the program text, loads it on a CPU device with the
// world's communicator as the group of `axis`, and runs `body`; what fails
// (the parse, the load, the body's checks through `fail`) becomes a test
// failure naming the rank.
//===----------------------------------------------------------------------===//
#pragma once
#include "runtime/executor/Program.h"
#include <functional>
#include <string>

namespace partita::test {

using Fail = std::function<void(const std::string &)>;

void runProgramOnRanks(int ranks, const char *text, const std::string &axis,
                       const std::function<void(int rank, rt::Program &program, const Fail &fail)> &body);

} // namespace partita::test
