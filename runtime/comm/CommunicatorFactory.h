//===- CommunicatorFactory.h - world communicators by backend name --------===//
//
// A backend ("mpi"; "nccl" in a build with CUDA) registers how to make the world
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
  /// The rank's device, for a backend that moves device memory itself
  /// ("nccl" needs the rank's CUDA device); null for "mpi".
  class Device *device = nullptr;
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
