//===- Session.cpp --------------------------------------------------------===//
#include "compiler/plan/Names.h"
#include "runtime/session/Session.h"
#include "runtime/comm/PendingSends.h"
#include "runtime/core/DeviceRegistry.h"
#include "compiler/onnx/OnnxImport.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/Path.h"
#include <algorithm>

namespace partita::rt {

Session::~Session() {
  if (device_) // nothing left after a step; a failed rank's sends go with its device
    PendingSends::process().abandon(*device_);
}

llvm::Expected<std::unique_ptr<Session>> Session::create(const Plan &plan, llvm::StringRef planDir, int rank,
                                                         GroupSplitter split, llvm::StringRef device,
                                                         bool offloadOptimizer) {
  std::unique_ptr<Session> s(new Session(plan, rank));
  // The device first: a name this build lacks fails on every rank alike,
  // before any collective.
  auto made = DeviceRegistry::get().create(device);
  if (!made)
    return made.takeError();
  s->device_ = std::move(*made);
  if (offloadOptimizer) {
    if (plan.params.empty())
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "--offload-optimizer needs a plan compiled with --train");
    s->host_ = std::make_unique<CpuDevice>();
  }
  for (const auto &[axis, members] : plan.groups) {
    int color = 0;
    for (size_t i = 0; i < members.size(); ++i)
      if (std::find(members[i].begin(), members[i].end(), rank) != members[i].end())
        color = static_cast<int>(i);
    auto group = split(color, rank, axis);
    if (!group)
      return group.takeError();
    s->env_.groups[axis] = group->get();
    s->groups_.push_back(std::move(*group));
  }
  // The rank that loads its programs refuses ones not its own, and a weights
  // file not its own (the launcher checked every rank's already, to fail
  // before any rank starts).
  if (auto err = checkRankFiles(s->rankPlan(), planDir))
    return std::move(err);
  for (const auto &[name, path] : s->rankPlan().programs)
    if (auto err = s->loadProgram(name, path, planDir))
      return std::move(err);
  return s;
}

void markUpdatedWeights(Graph &program, const Plan &plan) {
  if (plan.params.empty())
    return;
  llvm::StringSet<> params;
  for (const std::string &p : plan.params)
    params.insert(p);
  for (Node *n : program.nodes())
    if (n->is("Weight") && params.count(n->output()->name()))
      n->setAttr("updated_every_step", Attribute::ofInt(1));
}

llvm::Error Session::loadProgram(llvm::StringRef name, llvm::StringRef path, llvm::StringRef planDir) {
  llvm::SmallString<256> file(planDir);
  llvm::sys::path::append(file, path);
  auto graph = importOnnx(file, compiledProgramImport(plan_->weightFilePaths(), rankPlan().coords));
  if (!graph)
    return graph.takeError();
  markUpdatedWeights(**graph, *plan_);
  bool step = name.split('.').first == optimizer_io::kStep; // a model chunk's too (step.1)
  auto program = Program::load(**graph, step ? optimizerDevice() : *device_, &env_);
  if (!program)
    return program.takeError();
  if (name.split('.').first == optimizer_io::kBackward) // a model chunk's too (backward.1): its outputs are the gradients (the forward's: the loss and saved activations)
    (*program)->setOutputCategory(MemoryCategory::Gradients);
  programs_[name] = Loaded{std::move(*graph), std::move(*program)};
  return llvm::Error::success();
}

int64_t Session::axisSize(llvm::StringRef axis) const {
  for (const auto &a : plan_->mesh.axes)
    if (a.name == axis)
      return a.size;
  return 1;
}

int64_t Session::coordinate(llvm::StringRef axis) const {
  auto it = rankPlan().coords.find(axis.str());
  return it == rankPlan().coords.end() ? 0 : it->second;
}

Program *Session::program(llvm::StringRef name) const {
  auto it = programs_.find(name);
  return it == programs_.end() ? nullptr : it->second.program.get();
}

} // namespace partita::rt
