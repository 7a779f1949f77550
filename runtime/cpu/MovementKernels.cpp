//===- MovementKernels.cpp - copies, Transpose, Gather, Concat, Split, Slice, Expand --===//
//
// Type-generic: these move bytes, so one kernel serves every dtype.
//===----------------------------------------------------------------------===//
#include "compiler/ops/Broadcast.h"
#include "compiler/ops/OpRegistry.h"
#include "runtime/cpu/CpuKernels.h"
#include "runtime/cpu/Parallel.h"
#include <algorithm>
#include <cstring>
#include <type_traits>

namespace partita::rt::cpu {

namespace {

constexpr int64_t kGrainBytes = 1 << 16;

/// Reshape, Squeeze, Unsqueeze, Flatten, Identity, inference Dropout: same bytes.
class CopyKernel final : public Kernel {
public:
  llvm::Error run(KernelContext &ctx) override {
    if (ctx.outputs[0].data != ctx.inputs[0].data)
      std::memcpy(ctx.outputs[0].data, ctx.inputs[0].data, ctx.outputs[0].bytes());
    if (ctx.outputs.size() > 1) // Dropout's mask: everything kept
      std::memset(ctx.outputs[1].data, 1, ctx.outputs[1].bytes());
    return llvm::Error::success();
  }
};

class TransposeKernel final : public Kernel {
public:
  TransposeKernel(const Shape &in, std::vector<int64_t> perm, size_t elem) : elem_(elem) {
    auto strides = stridesOf(in);
    for (int64_t p : perm) {
      outShape_.push_back(in[p]);
      srcStride_.push_back(strides[p]);
    }
  }
  llvm::Error run(KernelContext &ctx) override {
    const char *src = static_cast<const char *>(ctx.inputs[0].data);
    char *dst = static_cast<char *>(ctx.outputs[0].data);
    int64_t rank = static_cast<int64_t>(outShape_.size());
    if (rank == 0) {
      std::memcpy(dst, src, elem_);
      return llvm::Error::success();
    }
    switch (elem_) {
    case 1: return copy<uint8_t>(src, dst);
    case 2: return copy<uint16_t>(src, dst);
    case 4: return copy<uint32_t>(src, dst);
    case 8: return copy<uint64_t>(src, dst);
    default: return copy<void>(src, dst);
    }
  }

private:
  /// Output row r's first element in the source.
  int64_t rowOffset(int64_t r) const {
    int64_t off = 0;
    for (int64_t d = static_cast<int64_t>(outShape_.size()) - 2; d >= 0; --d) {
      off += (r % outShape_[d]) * srcStride_[d];
      r /= outShape_[d];
    }
    return off;
  }

  /// T: an integer type of the element's size (void: any size, by memcpy).
  template <typename T> llvm::Error copy(const char *src, char *dst) const {
    constexpr bool sized = !std::is_void<T>::value;
    const size_t es = elem_;
    auto move = [&](char *o, const char *s) {
      if constexpr (sized)
        *reinterpret_cast<T *>(o) = *reinterpret_cast<const T *>(s);
      else
        std::memcpy(o, s, es);
    };
    int64_t rank = static_cast<int64_t>(outShape_.size());
    int64_t inner = outShape_.back(), innerStride = srcStride_.back();
    int64_t rows = numElements(outShape_) / std::max<int64_t>(inner, 1);
    // A transpose of the last two dimensions (the source's rows are the
    // output's columns): blocks of kBlock output rows, which read kBlock
    // consecutive source elements per column. Row by row, each output
    // element read a different cache line a source row apart (a power of
    // two apart for most models: the same cache set), and ran at a fifth of
    // the copy bandwidth (a [768, 8192] float32 transpose: 37 ms).
    constexpr int64_t kBlock = 16;
    int64_t height = rank >= 2 ? outShape_[rank - 2] : 1;
    if (rank >= 2 && innerStride != 1 && srcStride_[rank - 2] == 1 && height >= kBlock) {
      int64_t perMatrix = (height + kBlock - 1) / kBlock, blocks = rows / height * perMatrix;
      int64_t grain = std::max<int64_t>(1, kGrainBytes / std::max<int64_t>(1, kBlock * inner * static_cast<int64_t>(es)));
      parallelFor(blocks, grain, [&](int64_t b, int64_t e) {
        for (int64_t blk = b; blk < e; ++blk) {
          int64_t r0 = blk / perMatrix * height + blk % perMatrix * kBlock;
          int64_t n = std::min(kBlock, (blk / perMatrix + 1) * height - r0);
          const char *s = src + rowOffset(r0) * es;
          char *o = dst + r0 * inner * es;
          for (int64_t j = 0; j < inner; ++j, s += innerStride * es)
            for (int64_t i = 0; i < n; ++i)
              move(o + (i * inner + j) * es, s + i * es);
        }
      });
      return llvm::Error::success();
    }
    parallelFor(rows, std::max<int64_t>(1, kGrainBytes / std::max<int64_t>(1, inner * es)), [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        const char *s = src + rowOffset(r) * es;
        char *o = dst + r * inner * es;
        for (int64_t i = 0; i < inner; ++i)
          move(o + i * es, s + i * innerStride * es);
      }
    });
    return llvm::Error::success();
  }

private:
  Shape outShape_;
  llvm::SmallVector<int64_t, 6> srcStride_;
  size_t elem_;
};

class GatherKernel final : public Kernel {
public:
  GatherKernel(const Node &n) : node_(n) {
    const Shape &data = n.input(0)->type().shape;
    axis_ = normalizeAxis(n.intAttr("axis", 0), static_cast<int64_t>(data.size()));
    for (int64_t i = 0; i < static_cast<int64_t>(data.size()); ++i)
      (i < axis_ ? outer_ : i == axis_ ? dim_ : inner_) *= data[i];
    count_ = n.input(1)->type().numel();
    elem_ = dtypeSize(n.input(0)->type().dtype);
    idx64_ = n.input(1)->type().dtype == DType::I64;
  }
  llvm::Error run(KernelContext &ctx) override {
    const char *src = static_cast<const char *>(ctx.inputs[0].data);
    char *dst = static_cast<char *>(ctx.outputs[0].data);
    size_t row = static_cast<size_t>(inner_) * elem_;
    for (int64_t k = 0; k < count_; ++k) {
      int64_t j = idx64_ ? ctx.inputs[1].as<int64_t>()[k] : ctx.inputs[1].as<int32_t>()[k];
      if (j < -dim_ || j >= dim_)
        return kernelError(node_, "index " + llvm::Twine(j) + " out of range for dimension " + llvm::Twine(dim_));
    }
    parallelFor(outer_ * count_, std::max<int64_t>(1, kGrainBytes / std::max<size_t>(row, 1)), [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        int64_t o = r / count_, k = r % count_;
        int64_t j = idx64_ ? ctx.inputs[1].as<int64_t>()[k] : ctx.inputs[1].as<int32_t>()[k];
        if (j < 0)
          j += dim_;
        std::memcpy(dst + r * row, src + (o * dim_ + j) * row, row);
      }
    });
    return llvm::Error::success();
  }

private:
  const Node &node_;
  int64_t axis_ = 0, outer_ = 1, dim_ = 1, inner_ = 1, count_ = 0;
  size_t elem_ = 4;
  bool idx64_ = true;
};

/// partita.EmbeddingGrad (f32): zeros, then the row of each id in this
/// block [offset, offset + rows) accumulates its dy row, ids in order (the
/// sum is deterministic); threads split the columns.
class EmbeddingGradKernel final : public Kernel {
public:
  explicit EmbeddingGradKernel(const Node &n)
      : rows_(n.output()->type().shape[0]), width_(n.output()->type().shape[1]),
        count_(n.input(1)->type().numel()), offset_(n.intAttr("offset", 0)),
        idx64_(n.input(1)->type().dtype == DType::I64) {}
  llvm::Error run(KernelContext &ctx) override {
    float *out = ctx.outputs[0].as<float>();
    const float *dy = ctx.inputs[2].as<float>();
    std::memset(out, 0, ctx.outputs[0].bytes());
    int64_t width = width_;
    parallelFor(width, 256, [&](int64_t c0, int64_t c1) {
      for (int64_t k = 0; k < count_; ++k) {
        int64_t id = idx64_ ? ctx.inputs[1].as<int64_t>()[k] : ctx.inputs[1].as<int32_t>()[k];
        int64_t row = id - offset_;
        if (row < 0 || row >= rows_)
          continue;
        float *o = out + row * width;
        const float *d = dy + k * width;
        for (int64_t c = c0; c < c1; ++c)
          o[c] += d[c];
      }
    });
    return llvm::Error::success();
  }

private:
  int64_t rows_, width_, count_, offset_;
  bool idx64_;
};

/// Slice with unit steps and constant bounds: a box of the input, copied as
/// contiguous runs of its innermost dimension.
class SliceKernel final : public Kernel {
public:
  static llvm::Expected<std::unique_ptr<Kernel>> create(const Node &n) {
    const Shape &in = n.input(0)->type().shape, &out = n.output()->type().shape;
    int64_t rank = static_cast<int64_t>(in.size());
    std::vector<const Tensor *> args;
    for (size_t i = 1; i < n.numInputs(); ++i)
      args.push_back(n.input(i) ? constantValue(n.input(i)) : nullptr);
    if (args.size() < 2 || !args[0] || !args[1] || (args.size() > 2 && n.input(3) && !args[2]) ||
        (args.size() > 3 && n.input(4) && !args[3]) || rank == 0)
      return makeFallbackKernel(n);
    auto k = std::unique_ptr<SliceKernel>(new SliceKernel());
    k->start_.assign(rank, 0);
    std::vector<int64_t> starts = args[0]->toInts(), axes;
    if (args.size() > 2 && args[2])
      axes = args[2]->toInts();
    else
      for (size_t i = 0; i < starts.size(); ++i)
        axes.push_back(static_cast<int64_t>(i));
    if (args.size() > 3 && args[3])
      for (int64_t st : args[3]->toInts())
        if (st != 1)
          return makeFallbackKernel(n);
    for (size_t i = 0; i < axes.size(); ++i) {
      int64_t ax = normalizeAxis(axes[i], rank), s = starts[i];
      if (s < 0)
        s += in[ax];
      k->start_[ax] = std::clamp<int64_t>(s, 0, in[ax]);
    }
    k->in_ = in;
    k->out_ = out;
    k->elem_ = dtypeSize(n.input(0)->type().dtype);
    return std::unique_ptr<Kernel>(std::move(k));
  }

  llvm::Error run(KernelContext &ctx) override {
    const char *src = static_cast<const char *>(ctx.inputs[0].data);
    char *dst = static_cast<char *>(ctx.outputs[0].data);
    int64_t rank = static_cast<int64_t>(in_.size()), runLen = out_.back(), rows = numElements(out_) / std::max<int64_t>(runLen, 1);
    auto inStrides = stridesOf(in_);
    size_t runBytes = static_cast<size_t>(runLen) * elem_;
    parallelFor(rows, std::max<int64_t>(1, kGrainBytes / std::max<int64_t>(1, static_cast<int64_t>(runBytes))),
                [&](int64_t b, int64_t e) {
                  for (int64_t r = b; r < e; ++r) {
                    int64_t rem = r, off = start_[rank - 1];
                    for (int64_t d = rank - 2; d >= 0; --d) {
                      off += (rem % out_[d] + start_[d]) * inStrides[d];
                      rem /= out_[d];
                    }
                    std::memcpy(dst + r * runBytes, src + off * static_cast<int64_t>(elem_), runBytes);
                  }
                });
    return llvm::Error::success();
  }

private:
  SliceKernel() = default;
  Shape in_, out_;
  std::vector<int64_t> start_;
  size_t elem_ = 4;
};

/// Concat and Split: blocks of contiguous bytes along an axis.
class AxisBlocksKernel final : public Kernel {
public:
  AxisBlocksKernel(const Node &n, bool concat) : concat_(concat) {
    const Value *whole = concat ? n.output() : n.input(0);
    const Shape &s = whole->type().shape;
    int64_t axis = normalizeAxis(n.intAttr("axis", 0), static_cast<int64_t>(s.size()));
    size_t es = dtypeSize(whole->type().dtype);
    int64_t inner = 1;
    for (int64_t i = axis + 1; i < static_cast<int64_t>(s.size()); ++i)
      inner *= s[i];
    for (int64_t i = 0; i < axis; ++i)
      outer_ *= s[i];
    wholeRow_ = static_cast<size_t>(s[axis] * inner) * es;
    const auto &parts = concat ? n.inputs() : n.outputs();
    for (const Value *p : parts)
      partRows_.push_back(static_cast<size_t>(p->type().shape[axis] * inner) * es);
  }
  llvm::Error run(KernelContext &ctx) override {
    char *whole = static_cast<char *>(concat_ ? ctx.outputs[0].data : ctx.inputs[0].data);
    auto &parts = concat_ ? ctx.inputs : ctx.outputs;
    for (int64_t o = 0; o < outer_; ++o) {
      size_t off = o * wholeRow_;
      for (size_t p = 0; p < partRows_.size(); ++p) {
        char *part = static_cast<char *>(parts[p].data) + o * partRows_[p];
        if (concat_)
          std::memcpy(whole + off, part, partRows_[p]);
        else
          std::memcpy(part, whole + off, partRows_[p]);
        off += partRows_[p];
      }
    }
    return llvm::Error::success();
  }

private:
  bool concat_;
  int64_t outer_ = 1;
  size_t wholeRow_ = 0;
  std::vector<size_t> partRows_;
};

/// Expand: broadcast copy.
class ExpandKernel final : public Kernel {
public:
  ExpandKernel(const Node &n)
      : idx_(n.input(0)->type().shape, n.output()->type().shape), elem_(dtypeSize(n.output()->type().dtype)) {}
  llvm::Error run(KernelContext &ctx) override {
    const char *src = static_cast<const char *>(ctx.inputs[0].data);
    char *dst = static_cast<char *>(ctx.outputs[0].data);
    int64_t n = ctx.outputs[0].numel();
    size_t es = elem_;
    parallelFor(n, kGrainBytes / es, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i)
        std::memcpy(dst + i * es, src + idx_(i) * es, es);
    });
    return llvm::Error::success();
  }

private:
  BroadcastIndexer idx_;
  size_t elem_;
};

llvm::Expected<std::unique_ptr<Kernel>> makeCopy(const Node &) { return std::make_unique<CopyKernel>(); }

} // namespace

void registerMovementKernels(KernelRegistry &r) {
  for (const char *op : {"Reshape", "Squeeze", "Unsqueeze", "Identity", "Flatten"})
    r.add(op, kCpuDevice, makeCopy);
  r.add("Dropout", kCpuDevice, [](const Node &n) -> llvm::Expected<std::unique_ptr<Kernel>> {
    // Training mode with ratio 0 is still the identity; a real drop needs a
    // random generator, which this runtime does not have yet.
    if (n.input(2)) {
      const Tensor *mode = constantValue(n.input(2));
      const Tensor *ratio = n.input(1) ? constantValue(n.input(1)) : nullptr;
      bool dropsNothing = mode && (mode->intAt(0) == 0 || (ratio && ratio->at(0) == 0.0));
      if (!dropsNothing)
        return kernelError(n, "training-mode Dropout with a non-zero ratio is not supported");
    }
    return std::make_unique<CopyKernel>();
  });
  r.add("Transpose", kCpuDevice, [](const Node &n) -> llvm::Expected<std::unique_ptr<Kernel>> {
    return std::unique_ptr<Kernel>(
        new TransposeKernel(n.input(0)->type().shape, transposePerm(n), dtypeSize(n.input(0)->type().dtype)));
  });
  r.add("Gather", kCpuDevice, [](const Node &n) -> llvm::Expected<std::unique_ptr<Kernel>> {
    return std::unique_ptr<Kernel>(new GatherKernel(n));
  });
  r.add("Slice", kCpuDevice, SliceKernel::create);
  r.add("partita.EmbeddingGrad", kCpuDevice, [](const Node &n) -> llvm::Expected<std::unique_ptr<Kernel>> {
    if (n.output()->type().dtype != DType::F32)
      return makeFallbackKernel(n);
    return std::unique_ptr<Kernel>(new EmbeddingGradKernel(n));
  });
  r.add("Concat", kCpuDevice, [](const Node &n) -> llvm::Expected<std::unique_ptr<Kernel>> {
    return std::unique_ptr<Kernel>(new AxisBlocksKernel(n, true));
  });
  r.add("Split", kCpuDevice, [](const Node &n) -> llvm::Expected<std::unique_ptr<Kernel>> {
    return std::unique_ptr<Kernel>(new AxisBlocksKernel(n, false));
  });
  r.add("Expand", kCpuDevice, [](const Node &n) -> llvm::Expected<std::unique_ptr<Kernel>> {
    return std::unique_ptr<Kernel>(new ExpandKernel(n));
  });
}

} // namespace partita::rt::cpu
