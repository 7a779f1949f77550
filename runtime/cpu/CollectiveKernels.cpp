//===- CollectiveKernels.cpp - partita.AllReduce/AllGather/ReduceScatter ---===//
//
// Communicators work on rank-major blocks; a gather or scatter along an inner
// dimension re-lays the blocks through a staging buffer:
//   AllGather(dim):     [outer, l, inner] per rank -> [p][outer, l, inner] -> [outer, p*l, inner]
//   ReduceScatter(dim): [outer, p*l, inner] -> [p][outer, l, inner] -> reduce block `rank`
//   ReduceScatter(x1, x2, ..) (a bucket, dim 0): [p][x1 block, x2 block, ..] -> reduce block `rank`
//   AllGather(x1, x2, ..) (a bucket, dim 0):     [x1, x2, ..] per rank -> [p][x1, x2, ..] -> each result [p][xi]
//===----------------------------------------------------------------------===//
#include "compiler/ops/OpRegistry.h"
#include "runtime/comm/Communicator.h"
#include "runtime/core/MemoryLedger.h"
#include "runtime/cpu/CpuKernels.h"
#include <algorithm>
#include <cstring>
#include <limits>

namespace partita::rt::cpu {

namespace {

enum class Coll { AllReduce, AllGather, ReduceScatter };

/// A collective's own staging bytes (a deferring reduce-scatter's sums, a
/// bucket's received parts when its results are not one block): memory of
/// the kernel's device, charged to the ledger, grown (its bytes not kept)
/// when a run needs more. data() is the address the kernel and the
/// device-aware communicator use (Device::kernelAddress). Packing buffers
/// are scratch (Kernel::scratch).
class Staging {
public:
  Staging() = default;
  Staging(const Staging &) = delete;
  Staging &operator=(const Staging &) = delete;
  ~Staging() { release(); }
  char *data() const { return static_cast<char *>(device_ ? device_->kernelAddress(memory_) : nullptr); }
  llvm::Error resize(Device &device, size_t n) {
    if (memory_ && (&device != device_ || n > bytes_))
      release();
    if (!memory_ && n) {
      memory_ = device.allocate(n);
      if (!memory_)
        return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                       "out of " + device.name() + " memory for " + std::to_string(n) +
                                           " bytes of collective staging");
      device_ = &device, bytes_ = n;
      charge_.setLedger(device.ledger());
      charge_.resize(n);
    }
    return llvm::Error::success();
  }
  void setCategory(MemoryCategory c) { charge_.setCategory(c); }

private:
  void release() {
    if (memory_)
      device_->deallocate(memory_);
    memory_ = nullptr, bytes_ = 0;
    charge_.resize(0);
  }
  Device *device_ = nullptr;
  void *memory_ = nullptr;
  size_t bytes_ = 0;
  MemoryCharge charge_{MemoryCategory::Communication, 0};
};

class CollectiveKernel final : public Kernel {
public:
  bool communicates() const override { return true; }
  CollectiveKernel(const Node &n, Coll kind)
      : node_(n), kind_(kind), axis_(n.stringAttr("axis", "")),
        reduce_(n.stringAttr("reduce", "sum") == "max" ? Communicator::ReduceOp::Max : Communicator::ReduceOp::Sum) {
    async_ = n.intAttr("async", 0) != 0;
    // An async all-gather reads its operand until it finishes: only a weight
    // or a graph input (bound for the whole run) outlives the kernels after
    // it; an operand in the arena could be overwritten meanwhile.
    if (kind == Coll::AllGather && async_ && n.input(0)->definingNode() &&
        !n.input(0)->definingNode()->is("Weight"))
      async_ = false;
    const Value *whole = kind == Coll::AllGather ? n.output() : n.input(0);
    const Shape &s = whole->type().shape;
    int64_t dim = normalizeAxis(n.intAttr("dim", 0), static_cast<int64_t>(s.size()));
    parts_ = n.intAttr("parts", 1);
    elem_ = dtypeSize(whole->type().dtype);
    for (int64_t d = 0; d < static_cast<int64_t>(s.size()); ++d)
      if (kind != Coll::AllReduce && d < dim)
        outer_ *= s[d];
    // A split inside `outer` blocks of dim: each block is one more outer row.
    if (kind != Coll::AllReduce)
      outer_ *= n.intAttr("outer", 1);
    blockBytes_ = static_cast<size_t>(numElements(s) / std::max<int64_t>(parts_, 1)) * elem_;
    rowBytes_ = outer_ ? blockBytes_ / outer_ : 0; // one [l, inner] row of a block
    // Staging, as run() sizes it: a bucket packs its operands (a reduce-
    // scatter's also receives 1/parts of them); an inner split re-lays blocks.
    size_t operands = 0;
    for (const Value *in : n.inputs())
      operands += in ? static_cast<size_t>(in->type().numel()) * dtypeSize(in->type().dtype) : 0;
    // A bucket's results are one block (the executor lays them back to
    // back): an all-reduce reduces there in place, a reduce-scatter receives
    // there, and only the reduce-scatter's rank-major packing is staged.
    bucket_ = n.numInputs() > 1 || (kind == Coll::ReduceScatter && async_);
    // Only an async bucket (run while the backward goes on) defers; it sums
    // in float32, as the runtime's accumulator does (half operands widened).
    DType t = n.input(0)->type().dtype;
    deferrable_ = kind == Coll::ReduceScatter && bucket_ && async_ && n.intAttr("defer", 0) != 0 &&
                  (t == DType::F32 || isHalfFloat(t));
    if (deferrable_) {
      staging_.setCategory(MemoryCategory::Gradients);
      sumBytes_ = operands / elem_ * sizeof(float);
    }
    // The packing buffers are scratch, held until finish() when async.
    if (bucket_ && kind == Coll::ReduceScatter)
      scratch_ = operands;
    else if (bucket_ && kind == Coll::AllGather) // this rank's blocks packed, then everyone's
      scratch_ = operands + operands * static_cast<size_t>(parts_);
    else if (!bucket_ && kind != Coll::AllReduce && outer_ != 1)
      scratch_ = blockBytes_ * static_cast<size_t>(parts_);
  }

  size_t deferredSumBytes() const override { return sumBytes_; }
  ScratchNeed scratch() const override { return {scratch_, MemoryCategory::Communication}; }
  bool wantsContiguousOutputs() const override { return bucket_ && kind_ != Coll::AllGather; }
  bool defersInside() const override { return deferrable_; }

  llvm::Error run(KernelContext &ctx) override {
    int64_t elements = 0;
    for (const TensorView &v : ctx.inputs)
      elements += v.numel();
    elements = std::max(elements, ctx.outputs[0].numel());
    if (elements > std::numeric_limits<int>::max()) // MPI counts are ints (checked here: inspect loads, never runs)
      return kernelError(node_, "moves " + llvm::Twine(elements) + " elements, more than MPI's limit of 2^31 - 1 in "
                                "one call (compile with a smaller --bucket-mb, or more tensor parallelism)");
    auto group = axisGroup(node_, ctx, axis_, parts_);
    if (!group)
      return group.takeError();
    Communicator *comm = *group;
    if (auto err = ctx.follow(*comm)) // what it reads is written, what it writes no longer read
      return err;
    DType dt = ctx.inputs[0].dtype;
    void *out = ctx.outputs[0].data;
    const void *in = ctx.inputs[0].data;
    size_t blockElems = blockBytes_ / elem_;
    switch (kind_) {
    case Coll::AllReduce:
      return startAllReduce(ctx, *comm);
    case Coll::AllGather: {
      if (bucket_)
        return allGatherBucket(ctx, *comm);
      if (outer_ == 1 && async_) { // ZeRO-3's prefetch: started here, finished when first read
        if (handle_ >= 0)
          return kernelError(node_, "started again before its previous all-gather finished");
        comm_ = comm;
        auto h = comm->startAllGather(in, out, blockElems, dt);
        if (!h)
          return h.takeError();
        handle_ = *h;
        return llvm::Error::success();
      }
      if (outer_ == 1)
        return comm->allGather(in, out, blockElems, dt);
      char *staging = static_cast<char *>(ctx.scratch);
      if (auto err = comm->allGather(in, staging, blockElems, dt))
        return err;
      char *o = static_cast<char *>(out);
      for (int64_t r = 0; r < outer_; ++r)
        for (int64_t p = 0; p < parts_; ++p)
          std::memcpy(o + (r * parts_ + p) * rowBytes_, staging + p * blockBytes_ + r * rowBytes_, rowBytes_);
      return llvm::Error::success();
    }
    case Coll::ReduceScatter: {
      if (ctx.inputs.size() > 1 || async_)
        return startReduceScatterBucket(ctx, *comm);
      if (outer_ == 1)
        return comm->reduceScatter(in, out, blockElems, dt);
      char *staging = static_cast<char *>(ctx.scratch);
      const char *i = static_cast<const char *>(in);
      for (int64_t r = 0; r < outer_; ++r)
        for (int64_t p = 0; p < parts_; ++p)
          std::memcpy(staging + p * blockBytes_ + r * rowBytes_, i + (r * parts_ + p) * rowBytes_, rowBytes_);
      return comm->reduceScatter(staging, out, blockElems, dt);
    }
    }
    return llvm::Error::success();
  }

  bool isAsync() const override { return async_; }

  llvm::Error finish(KernelContext &ctx) override {
    if (handle_ < 0)
      return llvm::Error::success();
    int h = handle_;
    handle_ = -1;
    if (auto err = comm_->wait(h))
      return err;
    if (inPlace_)
      return llvm::Error::success();
    if (kind_ == Coll::ReduceScatter)
      unpack(ctx, received_);
    else if (ctx.outputs.size() > 1)
      unpack(ctx, staging_);
    return llvm::Error::success();
  }

  void progress() override {
    if (handle_ >= 0)
      comm_->progress();
  }

private:
  /// One operand reduces in its output buffer; several (a bucket) go through
  /// one staging buffer, so the bucket is one collective. Async: started
  /// here, finished in finish().
  llvm::Error startAllReduce(KernelContext &ctx, Communicator &comm) {
    DType dt = ctx.inputs[0].dtype;
    void *buf = ctx.outputs[0].data;
    size_t count = ctx.outputs[0].numel();
    inPlace_ = ctx.outputs.size() > 1 && backToBack(ctx.outputs);
    // Float and half gradients defer alike: the accumulator sums this rank's
    // micro-batches in float32, and the last micro-batch's pack adds that sum
    // (rounded once to a half operand's type) before the one reduction.
    bool defer = ctx.deferReductions && (dt == DType::F32 || isHalfFloat(dt));
    if (ctx.inputs.size() == 1 || defer || inPlace_) {
      for (size_t i = 0; i < ctx.inputs.size(); ++i)
        pack(ctx, i, ctx.outputs[i].data);
      if (defer) // this rank's partial sums, reduced with a later micro-batch's
        return llvm::Error::success();
      for (size_t i = 1; inPlace_ && i < ctx.outputs.size(); ++i)
        count += ctx.outputs[i].numel();
    } else {
      size_t bytes = 0;
      for (const TensorView &in : ctx.inputs)
        bytes += in.bytes();
      if (auto err = staging_.resize(ctx.device, bytes))
        return kernelError(node_, llvm::toString(std::move(err)));
      bytes = 0;
      for (size_t i = 0; i < ctx.inputs.size(); ++i) {
        pack(ctx, i, staging_.data() + bytes);
        bytes += ctx.inputs[i].bytes();
      }
      buf = staging_.data();
      count = bytes / elem_;
    }
    if (!async_ || reduce_ != Communicator::ReduceOp::Sum) {
      if (auto err = comm.allReduce(buf, count, dt, reduce_))
        return err;
      if (ctx.inputs.size() > 1 && !inPlace_)
        unpack(ctx, staging_);
      return llvm::Error::success();
    }
    if (handle_ >= 0)
      return kernelError(node_, "started again before its previous all-reduce finished");
    comm_ = &comm;
    auto h = comm.startAllReduce(buf, count, dt);
    if (!h)
      return h.takeError();
    handle_ = *h;
    return llvm::Error::success();
  }

  /// Several operands split on dimension 0 (ZeRO's flat gradients), or an
  /// async one: every operand's block of rank 0, then of rank 1, ... through
  /// one packing buffer (the operands' buffers are free once this returns),
  /// one reduce-scatter into the results (or a second buffer, unpacked into
  /// them; in finish() when async: it runs while the backward goes on).
  llvm::Error startReduceScatterBucket(KernelContext &ctx, Communicator &comm) {
    size_t total = 0;
    for (const TensorView &in : ctx.inputs)
      total += in.bytes();
    // Deferring (ZeRO-1 over micro-batches), the kernel keeps this rank's
    // sums of the whole gradients in float32 (staging_, made at the first
    // micro-batch that defers: none with one micro-batch), packed rank-major
    // as the reduce-scatter reads them; the last micro-batch packs the sums
    // plus its own, rounded once to the operands' type. Otherwise the
    // operands are packed into the scratch as they are.
    const bool deferring = deferrable_ && ctx.deferReductions;
    if (deferring)
      if (auto err = staging_.resize(ctx.device, sumBytes_))
        return kernelError(node_, llvm::toString(std::move(err)));
    float *sums = deferrable_ && (deferring || summed_) ? reinterpret_cast<float *>(staging_.data()) : nullptr;
    char *packed = static_cast<char *>(ctx.scratch);
    char *dst = packed;
    for (int64_t p = 0; p < parts_; ++p)
      for (const TensorView &in : ctx.inputs) {
        size_t block = in.bytes() / static_cast<size_t>(parts_);
        const char *src = static_cast<const char *>(in.data) + static_cast<size_t>(p) * block;
        int64_t n = static_cast<int64_t>(block / elem_);
        if (deferring)
          accumulate(in.dtype, src, sums, n, !summed_);
        else if (sums) // the last micro-batch after deferred ones
          addAndRound(in.dtype, src, sums, dst, n);
        else
          std::memcpy(dst, src, block);
        sums = sums ? sums + n : nullptr;
        dst += block;
      }
    if (deferring) {
      summed_ = true;
      return llvm::Error::success();
    }
    summed_ = false;
    inPlace_ = backToBack(ctx.outputs);
    if (!inPlace_)
      if (auto err = received_.resize(ctx.device, total / static_cast<size_t>(parts_)))
        return kernelError(node_, llvm::toString(std::move(err)));
    void *into = inPlace_ ? ctx.outputs[0].data : received_.data();
    size_t count = total / static_cast<size_t>(parts_) / elem_;
    DType dt = ctx.inputs[0].dtype;
    if (!async_) {
      if (auto err = comm.reduceScatter(packed, into, count, dt))
        return err;
      if (!inPlace_)
        unpack(ctx, received_);
      return llvm::Error::success();
    }
    if (handle_ >= 0)
      return kernelError(node_, "started again before its previous reduce-scatter finished");
    comm_ = &comm;
    auto h = comm.startReduceScatter(packed, into, count, dt);
    if (!h)
      return h.takeError();
    handle_ = *h;
    return llvm::Error::success();
  }

  /// Several operands gathered on dimension 0 (ZeRO's updated parameter
  /// shards): this rank's operands packed back to back, one all-gather of
  /// them, each rank's part unpacked into the results (both in the scratch).
  llvm::Error allGatherBucket(KernelContext &ctx, Communicator &comm) {
    size_t mine = 0;
    char *packed = static_cast<char *>(ctx.scratch);
    for (const TensorView &in : ctx.inputs) {
      std::memcpy(packed + mine, in.data, in.bytes());
      mine += in.bytes();
    }
    char *gathered = packed + mine;
    if (auto err = comm.allGather(packed, gathered, mine / elem_, ctx.inputs[0].dtype))
      return err;
    for (int64_t p = 0; p < parts_; ++p) {
      const char *from = gathered + static_cast<size_t>(p) * mine;
      for (size_t i = 0; i < ctx.inputs.size(); ++i) {
        size_t block = ctx.inputs[i].bytes();
        std::memcpy(static_cast<char *>(ctx.outputs[i].data) + static_cast<size_t>(p) * block, from, block);
        from += block;
      }
    }
    return llvm::Error::success();
  }

  /// Adds n elements of `t` at src, widened, to the float32 `sums` (the
  /// first micro-batch's replacing them).
  static void accumulate(DType t, const void *src, float *sums, int64_t n, bool first) {
    if (t == DType::F32) {
      const auto *x = static_cast<const float *>(src);
#pragma omp parallel for if (n > (1 << 16))
      for (int64_t k = 0; k < n; ++k)
        sums[k] = first ? x[k] : sums[k] + x[k];
      return;
    }
    const auto *x = static_cast<const uint16_t *>(src);
#pragma omp parallel for if (n > (1 << 16))
    for (int64_t k = 0; k < n; ++k)
      sums[k] = first ? widenHalf(t, x[k]) : sums[k] + widenHalf(t, x[k]);
  }

  /// out = the float32 `sums` plus n elements of `t` at src, rounded once to
  /// `t` (a half type widened for the sum).
  static void addAndRound(DType t, const void *src, const float *sums, void *out, int64_t n) {
    if (t == DType::F32) {
      const auto *x = static_cast<const float *>(src);
      auto *o = static_cast<float *>(out);
#pragma omp parallel for if (n > (1 << 16))
      for (int64_t k = 0; k < n; ++k)
        o[k] = sums[k] + x[k];
      return;
    }
    const auto *x = static_cast<const uint16_t *>(src);
    auto *o = static_cast<uint16_t *>(out);
#pragma omp parallel for if (n > (1 << 16))
    for (int64_t k = 0; k < n; ++k)
      o[k] = roundToHalf(t, sums[k] + widenHalf(t, x[k]));
  }

  /// Whether the views lie back to back in memory, in order (one block).
  static bool backToBack(const std::vector<TensorView> &views) {
    for (size_t i = 1; i < views.size(); ++i)
      if (static_cast<const char *>(views[i].data) != static_cast<const char *>(views[i - 1].data) + views[i - 1].bytes())
        return false;
    return true;
  }

  /// Operand i, plus its addend (gradient accumulation: float32 sums, which
  /// a half operand widens into and rounds back from once), at `dst`.
  static void pack(const KernelContext &ctx, size_t i, void *dst) {
    const TensorView &in = ctx.inputs[i];
    const void *addend = !ctx.deferReductions && ctx.addends && i < ctx.addends->size() ? (*ctx.addends)[i] : nullptr;
    if (!addend || (in.dtype != DType::F32 && !isHalfFloat(in.dtype))) {
      if (dst != in.data)
        std::memcpy(dst, in.data, in.bytes());
      return;
    }
    addAndRound(in.dtype, in.data, static_cast<const float *>(addend), dst, in.numel());
  }

  /// The results, one after another in `from` (a bucket's staging buffer,
  /// or a reduce-scatter's received parts).
  static void unpack(KernelContext &ctx, const Staging &from) {
    size_t offset = 0;
    for (TensorView &out : ctx.outputs) {
      std::memcpy(out.data, from.data() + offset, out.bytes());
      offset += out.bytes();
    }
  }

  const Node &node_;
  Coll kind_;
  bool async_ = false;
  Communicator *comm_ = nullptr;
  int handle_ = -1;
  std::string axis_;
  Communicator::ReduceOp reduce_;
  int64_t parts_ = 1, outer_ = 1;
  size_t elem_ = 4, blockBytes_ = 0, rowBytes_ = 0;
  Staging staging_, received_;
  size_t sumBytes_ = 0;   // a deferring reduce-scatter's float32 sums (staging_, over micro-batches)
  size_t scratch_ = 0;    // packing bytes (Kernel::scratch)
  bool bucket_ = false;
  bool deferrable_ = false; // a reduce-scatter that sums deferred micro-batches in staging_
  bool summed_ = false;     // staging_ holds deferred micro-batches' sums
  bool inPlace_ = false; // this run's results are one block: reduced or received there
};

} // namespace

void registerCollectiveKernels(KernelRegistry &r) {
  const std::pair<const char *, Coll> ops[] = {{"partita.AllReduce", Coll::AllReduce},
                                               {"partita.AllGather", Coll::AllGather},
                                               {"partita.ReduceScatter", Coll::ReduceScatter}};
  for (const auto &[op, kind] : ops) {
    Coll k = kind;
    r.add(op, kCpuDevice, [k](const Node &n) -> llvm::Expected<std::unique_ptr<Kernel>> {
      if (n.intAttr("parts", 0) < 1)
        return kernelError(n, "collective without a group size (run localize before loading)");
      if (n.is("ReduceScatter", "partita") && (n.numInputs() > 1 || n.intAttr("async", 0)))
        for (const Value *in : n.inputs())
          if (normalizeAxis(n.intAttr("dim", 0), in->type().rank()) != 0 || n.intAttr("outer", 1) != 1)
            return kernelError(n, "a bucketed or async reduce-scatter splits its operands on dimension 0");
      if (n.is("AllGather", "partita") && n.numInputs() > 1) {
        if (n.intAttr("async", 0))
          return kernelError(n, "a bucketed all-gather is blocking (async is for a single prefetched weight)");
        for (const Value *in : n.inputs())
          if (normalizeAxis(n.intAttr("dim", 0), in->type().rank()) != 0 || n.intAttr("outer", 1) != 1)
            return kernelError(n, "a bucketed all-gather gathers its operands on dimension 0");
      }
      for (size_t i = 1; i < n.numInputs(); ++i)
        if (!n.input(i) || n.input(i)->type().dtype != n.input(0)->type().dtype)
          return kernelError(n, "the operands of a bucket must share one element type");
      return std::unique_ptr<Kernel>(new CollectiveKernel(n, k));
    });
  }
}

} // namespace partita::rt::cpu
