//===- StageLinks.cpp -----------------------------------------------------===//
#include "runtime/pipeline/StageLinks.h"
#include <algorithm>
#include <cstring>

namespace partita::rt {

static llvm::Error fail(const llvm::Twine &msg) { return llvm::createStringError(llvm::inconvertibleErrorCode(), msg); }

llvm::Expected<StageLinks> StageLinks::create(const Plan &plan, int64_t stage, Communicator *pp,
                                              const Program &forward, const Program *backward) {
  StageLinks s;
  s.pp_ = pp;
  // Global stages (model chunks): stage c lives on rank c % pp of the group.
  // readPlan checked that every edge joins two of them.
  const int64_t ranks = plan.stages();
  auto outputIndex = [](const Program &p, const std::string &name) -> int64_t {
    const auto &outs = p.outputNames();
    auto it = std::find(outs.begin(), outs.end(), name);
    return it == outs.end() ? -1 : it - outs.begin();
  };
  for (size_t i = 0; i < plan.pipelineEdges.size(); ++i) {
    const Plan::Edge &e = plan.pipelineEdges[i];
    if (e.from != stage && e.to != stage)
      continue;
    if (!pp)
      return fail("the plan sends %" + e.value + " between stages, but this rank has no pp group");
    Link l;
    l.tag = static_cast<int>(i);
    l.value = e.value;
    if (e.to == stage) {
      l.peerStage = e.from;
      l.peer = static_cast<int>(e.from % ranks);
      const TensorType *t = forward.inputType(e.value);
      Phase phase = Phase::Forward;
      if (!t && backward && (t = backward->inputType(e.value)))
        phase = Phase::Backward;
      if (!t)
        return fail("stage " + llvm::Twine(stage) + " receives %" + e.value + ", which none of its programs reads");
      l.type = *t;
      s.links(phase, false).push_back(std::move(l));
    } else {
      l.peerStage = e.to;
      l.peer = static_cast<int>(e.to % ranks);
      int64_t at = outputIndex(forward, e.value);
      Phase phase = Phase::Forward;
      if (at < 0 && backward && (at = outputIndex(*backward, e.value)) >= 0)
        phase = Phase::Backward;
      if (at < 0)
        return fail("stage " + llvm::Twine(stage) + " sends %" + e.value + ", which none of its programs returns");
      l.output = static_cast<size_t>(at);
      s.links(phase, true).push_back(std::move(l));
    }
  }
  for (size_t i = 0; i < plan.pipelineWeights.size(); ++i) {
    const Plan::Edge &e = plan.pipelineWeights[i];
    if (e.from != stage && e.to != stage)
      continue;
    if (!pp)
      return fail("stage " + llvm::Twine(stage) + " shares weight '" + e.value + "' with another stage, but has no "
                  "pp group");
    Link l;
    l.tag = static_cast<int>(plan.pipelineEdges.size() + i);
    l.value = e.from == stage ? e.value : sharedWeightCopy(e.value, e.to);
    l.peerStage = e.from == stage ? e.to : e.from;
    l.peer = static_cast<int>(l.peerStage % ranks);
    s.shared_.push_back(std::move(l));
  }
  return std::move(s);
}

std::string StageLinks::peerName(const Link &l) {
  return "stage " + std::to_string(l.peerStage) + " (pp rank " + std::to_string(l.peer) + ")";
}

llvm::Error StageLinks::startSend(const Link &l, const TensorView &v) {
  const auto *p = static_cast<const uint8_t *>(v.data);
  pending_.push_back({-1, std::vector<uint8_t>(p, p + v.bytes())});
  auto handle = pp_->startSend(pending_.back().bytes.data(), static_cast<size_t>(v.numel()), v.dtype, l.peer, l.tag);
  if (!handle) {
    pending_.pop_back();
    return fail("sending %" + l.value + " to " + peerName(l) + ": " + llvm::toString(handle.takeError()));
  }
  pending_.back().handle = *handle;
  return llvm::Error::success();
}

const StageLinks::Link *StageLinks::sharedLink(llvm::StringRef param) const {
  for (const Link &l : shared_)
    if (l.value == param)
      return &l;
  return nullptr;
}

std::vector<std::string> StageLinks::sharedParameters() const {
  std::vector<std::string> out;
  for (const Link &l : shared_)
    out.push_back(l.value);
  return out;
}

llvm::Error StageLinks::sendSharedGradient(llvm::StringRef param, const TensorView &grad) {
  const Link *l = sharedLink(param);
  if (!l)
    return fail("stage shares no weight '" + param + "' with another");
  return startSend(*l, grad);
}

llvm::Error StageLinks::addSharedGradient(llvm::StringRef param, const TensorView &grad) {
  const Link *l = sharedLink(param);
  if (!l || grad.dtype != DType::F32)
    return fail("stage shares no f32 weight '" + param + "' with another");
  std::vector<float> theirs(static_cast<size_t>(grad.numel()));
  if (auto err = pp_->recv(theirs.data(), theirs.size(), DType::F32, l->peer, l->tag))
    return fail("receiving the gradient of shared weight '" + param + "' from " + peerName(*l) + ": " +
                llvm::toString(std::move(err)));
  float *g = static_cast<float *>(grad.data);
  for (size_t k = 0; k < theirs.size(); ++k)
    g[k] += theirs[k];
  return llvm::Error::success();
}

llvm::Error StageLinks::receive(Phase phase, llvm::StringMap<Tensor> &into) {
  for (const Link &l : links(phase, false)) {
    auto bytes = std::make_shared<std::vector<uint8_t>>(static_cast<size_t>(l.type.numel()) * dtypeSize(l.type.dtype));
    if (auto err = pp_->recv(bytes->data(), static_cast<size_t>(l.type.numel()), l.type.dtype, l.peer, l.tag))
      return fail("receiving %" + l.value + " from " + peerName(l) + ": " + llvm::toString(std::move(err)));
    into[l.value] = Tensor(l.type.dtype, l.type.shape, std::move(bytes));
  }
  return llvm::Error::success();
}

llvm::Error StageLinks::send(Phase phase, const std::vector<TensorView> &outputs) {
  // Sends finished since the last call free their copies (in order: the
  // oldest finish first between two ranks).
  while (!pending_.empty()) {
    auto done = pp_->test(pending_.front().handle);
    if (!done)
      return done.takeError();
    if (!*done)
      break;
    pending_.pop_front();
  }
  for (const Link &l : links(phase, true)) {
    if (l.output >= outputs.size())
      return fail("the program returned no output for %" + l.value);
    if (auto err = startSend(l, outputs[l.output]))
      return err;
  }
  return llvm::Error::success();
}

StageLinks::~StageLinks() {
  static auto *kept = new std::deque<Pending>(); // reachable for ever: no leak report, no free under MPI
  for (Pending &p : pending_)
    kept->push_back(std::move(p));
}

llvm::Error StageLinks::drain() {
  while (!pending_.empty()) {
    if (auto err = pp_->wait(pending_.front().handle))
      return err;
    pending_.pop_front();
  }
  return llvm::Error::success();
}

} // namespace partita::rt
