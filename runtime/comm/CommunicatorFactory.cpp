//===- CommunicatorFactory.cpp --------------------------------------------===//
#include "runtime/comm/CommunicatorFactory.h"
#include "llvm/ADT/StringExtras.h"
#include <map>

namespace partita::rt {

/// Backends by name (a function-local static: registrars in other files may
/// run before this file's statics are set up).
static std::map<std::string, CommunicatorBackend, std::less<>> &backends() {
  static std::map<std::string, CommunicatorBackend, std::less<>> table;
  return table;
}

CommunicatorRegistrar::CommunicatorRegistrar(const char *name, CommunicatorBackend backend) {
  backends()[name] = std::move(backend);
}

llvm::Expected<std::unique_ptr<Communicator>> makeWorldCommunicator(llvm::StringRef name,
                                                                    const CommunicatorOptions &options) {
  auto it = backends().find(name);
  if (it == backends().end())
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "no communicator backend '" + name + "' (registered: " +
                                       llvm::join(communicatorBackends(), ", ") + ")");
  return it->second(options);
}

std::vector<std::string> communicatorBackends() {
  std::vector<std::string> names;
  for (const auto &entry : backends())
    names.push_back(entry.first);
  return names;
}

} // namespace partita::rt
