//===- PlanFuzzer.cpp - readPlan on plan.json bytes -----------------------===//
#include "FuzzInput.h"
#include "compiler/plan/Plan.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string &path = partita::fuzz::writeInput(data, size, "-plan.json");
  auto plan = partita::readPlan(path);
  if (!plan)
    llvm::consumeError(plan.takeError());
  return 0;
}
