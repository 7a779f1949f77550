//===- P2PKernels.cpp - partita.Send and partita.Recv (pipeline edges) ----===//
//
// The group is the communicator along the node's axis (pp); the peer is the
// stage's rank in it, stage mod the group's size (a model chunk under
// interleaving lives on rank chunk mod pp). Send copies its operand into
// device memory, starts sending the copy and returns (PendingSends.h). Recv
// is asynchronous: the program posts it when it starts (split-pipeline
// orders the receives first) and waits for it right before the first
// reader, so the message arrives while the program computes what does not
// need it; it receives straight into its output buffer, which the memory
// plan keeps from the receive's step to its last reader.
//===----------------------------------------------------------------------===//
#include "compiler/plan/Names.h"
#include "runtime/comm/Communicator.h"
#include "runtime/comm/PendingSends.h"
#include "runtime/cpu/CpuKernels.h"
#include <cstring>

namespace partita::rt::cpu {

namespace {

/// A Send's or Recv's group and peer.
struct Peer {
  explicit Peer(const Node &n)
      : node(n), axis(n.stringAttr("axis", mesh_axis::kPipeline)), stage(n.intAttr("peer", 0)),
        tag(static_cast<int>(n.intAttr("tag", 0))) {}
  llvm::Expected<std::pair<Communicator *, int>> resolve(const KernelContext &ctx) const {
    Communicator *c = ctx.env ? ctx.env->group(axis) : nullptr;
    if (!c)
      return kernelError(node, "this rank has no '" + axis + "' group to reach pipeline stage " + llvm::Twine(stage));
    return std::pair{c, static_cast<int>(stage % c->size())};
  }
  std::string name(int rank) const { return pipelinePeer(stage, axis, rank); }
  const Node &node;
  std::string axis;
  int64_t stage;
  int tag;
};

class SendKernel final : public Kernel {
public:
  bool communicates() const override { return true; }
  explicit SendKernel(const Node &n) : peer_(n) {}
  llvm::Error run(KernelContext &ctx) override {
    auto to = peer_.resolve(ctx);
    if (!to)
      return to.takeError();
    const TensorView &v = ctx.inputs[0];
    auto fail = [&](llvm::Error err) {
      return kernelError(peer_.node, "sending %" + peer_.node.input(0)->name() + " to " + peer_.name(to->second) +
                                         ": " + llvm::toString(std::move(err)));
    };
    if (auto err = ctx.follow(*to->first)) // the operand is written (or a kernel before failed)
      return err;
    PendingSends &sends = PendingSends::process();
    auto copy = sends.allocate(ctx.device, v.bytes());
    if (!copy)
      return fail(copy.takeError());
    if (v.bytes()) // kernel addresses, both
      std::memcpy(ctx.device.kernelAddress(*copy), v.data, v.bytes());
    if (auto err = sends.start(*to->first, ctx.device, *copy, v.bytes(), static_cast<size_t>(v.numel()), v.dtype,
                               to->second, peer_.tag))
      return fail(std::move(err));
    return llvm::Error::success();
  }

private:
  Peer peer_;
};

class RecvKernel final : public Kernel {
public:
  bool communicates() const override { return true; }
  explicit RecvKernel(const Node &n) : peer_(n) {}
  bool isAsync() const override { return true; }
  llvm::Error run(KernelContext &ctx) override {
    auto from = peer_.resolve(ctx);
    if (!from)
      return from.takeError();
    comm_ = from->first;
    rank_ = from->second;
    if (auto err = ctx.follow(*comm_)) // the buffer it receives into is no longer read
      return err;
    TensorView &out = ctx.outputs[0];
    auto handle = comm_->startRecv(out.data, static_cast<size_t>(out.numel()), out.dtype, rank_, peer_.tag);
    if (!handle)
      return error(handle.takeError());
    handle_ = *handle;
    return llvm::Error::success();
  }
  void progress() override { comm_->progress(); }
  llvm::Error finish(KernelContext &) override {
    if (auto err = comm_->wait(handle_))
      return error(std::move(err));
    return llvm::Error::success();
  }

private:
  llvm::Error error(llvm::Error err) const {
    return kernelError(peer_.node, "receiving %" + peer_.node.output()->name() + " from " + peer_.name(rank_) + ": " +
                                       llvm::toString(std::move(err)));
  }
  Peer peer_;
  Communicator *comm_ = nullptr;
  int rank_ = 0, handle_ = -1;
};

} // namespace

void registerP2PKernels(KernelRegistry &r) {
  r.add("partita.Send", kCpuDevice,
        [](const Node &n) -> llvm::Expected<std::unique_ptr<Kernel>> { return std::make_unique<SendKernel>(n); });
  r.add("partita.Recv", kCpuDevice,
        [](const Node &n) -> llvm::Expected<std::unique_ptr<Kernel>> { return std::make_unique<RecvKernel>(n); });
}

} // namespace partita::rt::cpu
