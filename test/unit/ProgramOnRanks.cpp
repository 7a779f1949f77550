//===- ProgramOnRanks.cpp - one IR program run by mock ranks --------------===//
#include "ProgramOnRanks.h"
#include "MockCommunicator.h"
#include "compiler/ir/Parser.h"
#include "runtime/comm/Communicator.h"
#include "runtime/core/Device.h"
#include <gtest/gtest.h>
#include <mutex>

namespace partita::test {

void runProgramOnRanks(int ranks, const char *text, const std::string &axis,
                       const std::function<void(int rank, rt::Program &program, const Fail &fail)> &body) {
  std::mutex mu;
  std::vector<std::string> failures;
  MockWorld world(ranks);
  world.run([&](int rank, rt::Communicator &comm) {
    Fail fail = [&](const std::string &what) {
      std::lock_guard<std::mutex> lock(mu);
      failures.push_back("rank " + std::to_string(rank) + ": " + what);
    };
    auto g = parseGraph(text, "<test>");
    if (!g)
      return fail(llvm::toString(g.takeError()));
    rt::RuntimeEnv env;
    env.groups[axis] = &comm;
    rt::CpuDevice device;
    auto p = rt::Program::load(**g, device, &env);
    if (!p)
      return fail(llvm::toString(p.takeError()));
    body(rank, **p, fail);
  });
  for (const std::string &f : failures)
    ADD_FAILURE() << f;
}

} // namespace partita::test
