// The optimizer programs add-optimizer and split-programs make from a small
// training graph (its grad.<w> outputs), for tests of the runtime pieces
// that run them.
#pragma once
#include "compiler/ir/Parser.h"
#include "compiler/pass/PassManager.h"
#include "passes/AddOptimizer.h"
#include "passes/SplitPrograms.h"
#include <gtest/gtest.h>
#include <map>

namespace partita::test {

inline std::map<std::string, std::unique_ptr<Graph>> optimizerPrograms(llvm::StringRef text,
                                                                       const AdamWOptions &o = {}) {
  std::map<std::string, std::unique_ptr<Graph>> out;
  auto g = parseGraph(text, "<test>");
  EXPECT_TRUE(static_cast<bool>(g)) << llvm::toString(g.takeError());
  if (!g)
    return out;
  PassManager pm;
  pm.verifyEach = true;
  pm.add(createAddOptimizer(o));
  if (auto err = pm.run(**g)) {
    ADD_FAILURE() << llvm::toString(std::move(err));
    return out;
  }
  auto programs = splitPrograms(**g);
  EXPECT_TRUE(static_cast<bool>(programs)) << llvm::toString(programs.takeError());
  if (programs)
    for (NamedProgram &p : programs->programs)
      out[p.name] = std::move(p.graph);
  return out;
}

} // namespace partita::test
