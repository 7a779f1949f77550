//===- CommunicatorFactory.h - world communicators by backend name --------===//
//
// A backend ("mpi" here; "nccl" later) registers how to make the world
// communicator from a static CommunicatorRegistrar in its own file; callers
// ask for it by name and make their groups with Communicator::splitGroup.
//===----------------------------------------------------------------------===//
#pragma once
#include "runtime/comm/Communicator.h"
#include <functional>
#include <string>

namespace partita::rt {

struct CommunicatorOptions {
  /// How long a collective or receive may wait; <= 0: no deadline.
  double timeoutSeconds = kDefaultCollectiveTimeout;
};

using CommunicatorBackend =
    std::function<llvm::Expected<std::unique_ptr<Communicator>>(const CommunicatorOptions &options)>;

/// Registers `backend` under `name` (before main, from a static object).
struct CommunicatorRegistrar {
  CommunicatorRegistrar(const char *name, CommunicatorBackend backend);
};

/// The communicator over every rank of the job, from the backend `name`;
/// an unknown name is an error listing the registered ones.
llvm::Expected<std::unique_ptr<Communicator>> makeWorldCommunicator(llvm::StringRef name,
                                                                    const CommunicatorOptions &options = {});

/// The registered backends' names, sorted.
std::vector<std::string> communicatorBackends();

} // namespace partita::rt
