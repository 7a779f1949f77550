//===- Kernel.cpp - a communicating kernel following the compute stream ---===//
#include "runtime/kernels/Kernel.h"
#include "runtime/comm/Communicator.h"

namespace partita::rt {

llvm::Error KernelContext::follow(Communicator &comm) const {
  if (!ready)
    return llvm::Error::success();
  comm.follow(*ready);
  return device.takeError();
}

} // namespace partita::rt
