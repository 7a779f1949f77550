//===- StageLinks.h - what one pipeline stage sends and receives ----------===//
//
// The plan's pipeline edges (Plan::pipelineEdges), seen from one stage: the
// values its forward and backward programs read that another stage makes
// (received, blocking, from that stage's rank of this rank's pp group) and
// the outputs another stage reads (sent without blocking, from a copy, so a
// schedule never waits on a peer that is itself sending). Message tag: the
// edge's index. A stage's forward and backward run their micro-batches in
// order, so the k-th message of an edge is micro-batch k's (MPI keeps the
// order of messages between two ranks with one tag).
//===----------------------------------------------------------------------===//
#pragma once
#include "compiler/plan/Plan.h"
#include "compiler/ir/Tensor.h"
#include "runtime/comm/Communicator.h"
#include "runtime/executor/Program.h"
#include "llvm/ADT/StringMap.h"
#include <deque>

namespace partita::rt {

class StageLinks {
public:
  enum class Phase { Forward, Backward };

  /// The links of `stage` (the rank's coordinate on pp). `backward` may be
  /// null (inference). Fails naming an edge no program of the stage has.
  static llvm::Expected<StageLinks> create(const Plan &plan, int64_t stage, Communicator *pp, const Program &forward,
                                           const Program *backward);
  StageLinks() = default;
  StageLinks(StageLinks &&) = default;
  StageLinks &operator=(StageLinks &&) = default;
  /// Sends still going at the end (an error stopped the schedule) keep their
  /// buffers: MPI may still read them, and waiting could take the whole
  /// watchdog timeout when the peer is dead. The rank aborts next.
  ~StageLinks();

  /// Receives what the phase's program reads from other stages, into `into`
  /// (by value name).
  llvm::Error receive(Phase phase, llvm::StringMap<Tensor> &into);
  /// Sends the phase's outputs other stages read (`outputs`: the program's,
  /// in its order).
  llvm::Error send(Phase phase, const std::vector<TensorView> &outputs);
  /// Before the optimizer step, for a trained weight this stage and another
  /// hold (Plan::pipelineWeights: the weight and a stage's copy of it):
  /// sends this stage's summed gradient `grad` of parameter `param` to the
  /// other (from a copy); addSharedGradient then adds the other's into
  /// `grad`, so both step with the one sum. The same two additions in
  /// either order: both sums are equal to the bit.
  llvm::Error sendSharedGradient(llvm::StringRef param, const TensorView &grad);
  llvm::Error addSharedGradient(llvm::StringRef param, const TensorView &grad);
  /// This stage's parameters whose gradients it sums with another stage's.
  std::vector<std::string> sharedParameters() const;
  /// Waits for every send started (their buffers are then free).
  llvm::Error drain();
  /// Whether the phase's program receives (sends) anything.
  bool receivesIn(Phase phase) const { return !(phase == Phase::Forward ? recvForward_ : recvBackward_).empty(); }
  bool sendsIn(Phase phase) const { return !(phase == Phase::Forward ? sendForward_ : sendBackward_).empty(); }
  /// Whether this stage receives value `name`.
  bool receives(llvm::StringRef name) const {
    for (const auto *list : {&recvForward_, &recvBackward_})
      for (const Link &l : *list)
        if (l.value == name)
          return true;
    return false;
  }

private:
  struct Link {
    int tag = 0;
    int peer = 0;          // the other stage's rank in the pp group
    int64_t peerStage = 0; // the other stage (a model chunk under interleaving)
    std::string value;
    TensorType type; // receive: the program input's
    size_t output = 0; // send: the program output's index
  };
  struct Pending {
    int handle;
    std::vector<uint8_t> bytes;
  };
  std::vector<Link> &links(Phase phase, bool sending) {
    return sending ? (phase == Phase::Forward ? sendForward_ : sendBackward_)
                   : (phase == Phase::Forward ? recvForward_ : recvBackward_);
  }
  Communicator *pp_ = nullptr;
  std::vector<Link> recvForward_, recvBackward_, sendForward_, sendBackward_;
  std::vector<Link> shared_; // value: this stage's parameter
  const Link *sharedLink(llvm::StringRef param) const;
  llvm::Error startSend(const Link &l, const TensorView &v);
  /// "stage 3 (pp rank 1)": who a message goes to or comes from.
  static std::string peerName(const Link &l);
  std::deque<Pending> pending_;
};

} // namespace partita::rt
