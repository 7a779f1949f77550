//===- PassManager.h - passes, their registry and the pipeline runner -----===//
//
// A pass has a command-line name, a one-line summary, a description of what it
// expects and guarantees (shown by `partita-opt --list-passes`), and typed
// options (PassOption.h: declared once, as members) set from
// `name{key=value,...}` in a pipeline string.
//
//===----------------------------------------------------------------------===//
#pragma once
#include "compiler/ir/Graph.h"
#include "compiler/pass/PassOption.h"
#include "llvm/Support/Error.h"
#include <functional>
#include <memory>

namespace partita {

class Pass {
public:
  Pass() = default;
  Pass(const Pass &) = delete; // its options point at it
  Pass &operator=(const Pass &) = delete;
  virtual ~Pass() = default;
  virtual llvm::StringRef name() const = 0;
  virtual llvm::Error run(Graph &g) = 0;
  /// Whether this is a SplitPass.
  virtual bool splits() const { return false; }
  /// Sets option `key` through its declaration; an unknown key or a value
  /// the option does not take is an error naming the pass, the option and
  /// what it expects.
  llvm::Error setOption(llvm::StringRef key, llvm::StringRef value);
  /// The declared options, in declaration order.
  const std::vector<PassOptionBase *> &options() const { return options_; }

private:
  friend class PassOptionBase;
  std::vector<PassOptionBase *> options_;
};

/// A pass that cuts a graph into several (split-pipeline, split-programs).
/// In a pipeline, the passes after it run on each part; PassManager::run on
/// one graph refuses it.
class SplitPass : public Pass {
public:
  llvm::Error run(Graph &g) final;
  /// The parts, named after `g` (g.name + "." + the part's name).
  virtual llvm::Expected<std::vector<std::unique_ptr<Graph>>> split(const Graph &g) = 0;
  bool splits() const final { return true; }
};

struct PassInfo {
  std::string name;
  std::string summary;
  std::string description;
  std::function<std::unique_ptr<Pass>()> create;
};

/// "name=type (default): help" per declared option of `pass`, for
/// --list-passes (one line each).
std::vector<std::string> describeOptions(const Pass &pass);

class PassRegistry {
public:
  static PassRegistry &get();
  void add(PassInfo info) { passes_.push_back(std::move(info)); }
  const PassInfo *find(llvm::StringRef name) const;
  const std::vector<PassInfo> &all() const { return passes_; }

private:
  std::vector<PassInfo> passes_;
};

/// Registers every pass in passes/ (one list, in PassRegistry.cpp).
void registerAllPasses();

class PassManager {
public:
  /// Runs the verifier after each pass (always in debug builds).
  bool verifyEach = false;

  void add(std::unique_ptr<Pass> p) { passes_.push_back(std::move(p)); }
  /// Parses "a,b{opt=1},c" using the registry.
  llvm::Error addPipeline(llvm::StringRef pipeline);
  llvm::Error run(Graph &g);
  /// Runs the pipeline on every graph of `graphs`; a split pass replaces
  /// each graph by its parts, in order.
  llvm::Error run(std::vector<std::unique_ptr<Graph>> &graphs);

private:
  std::vector<std::unique_ptr<Pass>> passes_;
};

/// Error helper for passes: "pass-name: node 'x' (Op): msg".
llvm::Error passError(llvm::StringRef pass, const llvm::Twine &msg);

} // namespace partita
