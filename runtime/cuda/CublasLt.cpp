//===- CublasLt.cpp -------------------------------------------------------===//
#include "runtime/cuda/CublasLt.h"
#include <dlfcn.h>
#include <string>

namespace partita::rt::cuda {

llvm::Expected<CublasLt> openCublasLt(const std::string &soname) {
  auto fail = [&](const llvm::Twine &why) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "cannot use " + soname + ": " + why);
  };
  void *library = dlopen(soname.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!library)
    return fail(dlerror());
  CublasLt api;
#define PARTITA_CUBLASLT_RESOLVE(f)                                                                                    \
  api.f = reinterpret_cast<decltype(api.f)>(dlsym(library, #f));                                                      \
  if (!api.f)                                                                                                          \
    return fail("it has no " #f);
  PARTITA_CUBLASLT_FUNCTIONS(PARTITA_CUBLASLT_RESOLVE)
#undef PARTITA_CUBLASLT_RESOLVE
  return api;
}

llvm::Expected<const CublasLt *> cublasLt() {
  // Opened once per process (thread-safe), never closed; a failure is kept
  // as its message, so every caller gets it.
  static const auto opened = []() -> std::pair<CublasLt, std::string> {
    auto api = openCublasLt("libcublasLt.so." + std::to_string(CUBLAS_VER_MAJOR));
    if (!api)
      return {CublasLt{}, llvm::toString(api.takeError())};
    return {*api, ""};
  }();
  if (!opened.second.empty())
    return llvm::createStringError(llvm::inconvertibleErrorCode(), opened.second);
  return &opened.first;
}

} // namespace partita::rt::cuda
