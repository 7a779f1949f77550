//===- ShapeOps.cpp - shape computation and data movement ops -------------===//
//
// Shape, Reshape, Transpose, (Un)Squeeze, Concat, Split, Slice, Gather, Expand,
// ConstantOfShape, Range, Constant, Weight. Inference of Reshape, Expand,
// Slice, ConstantOfShape and Range needs the shape operand's value: it is
// known once the shape subgraph folds (static input shapes).
//===----------------------------------------------------------------------===//
#include "compiler/ops/Broadcast.h"
#include "compiler/ops/OpRegistry.h"
#include <cstring>
#include <numeric>

namespace partita {

namespace {

using Result = llvm::Expected<std::vector<Tensor>>;

/// Builds a tensor of `shape` whose element i is src's element map(i).
Tensor remap(const Tensor &src, Shape shape, const std::function<int64_t(int64_t)> &map) {
  size_t es = dtypeSize(src.dtype());
  int64_t n = numElements(shape);
  auto bytes = std::make_shared<std::vector<uint8_t>>(static_cast<size_t>(n) * es);
  for (int64_t i = 0; i < n; ++i)
    std::memcpy(bytes->data() + i * es, src.data() + map(i) * es, es);
  return Tensor(src.dtype(), std::move(shape), std::move(bytes));
}

Tensor withShape(const Tensor &t, Shape shape) {
  auto bytes = std::make_shared<std::vector<uint8_t>>(t.data(), t.data() + t.byteSize());
  return Tensor(t.dtype(), std::move(shape), std::move(bytes));
}

/// Multi-index of flat index i in `shape`.
llvm::SmallVector<int64_t, 4> unravel(int64_t i, llvm::ArrayRef<int64_t> shape) {
  llvm::SmallVector<int64_t, 4> idx(shape.size());
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    idx[d] = i % shape[d];
    i /= shape[d];
  }
  return idx;
}

const Tensor *requireValue(const InferContext &c, size_t i, llvm::StringRef what,
                           llvm::Error &err) {
  const Tensor *t = c.value(i);
  if (!t)
    err = c.error(what + " is not a compile-time constant; fix dynamic input dimensions with "
                         "--input-shape");
  return t;
}

/// "%t (= [-3,5])": a shape operand and the sizes it folds to, negative ones
/// as written (shapeString would show -1 as '?').
std::string foldedShape(const InferContext &c, size_t i, const Tensor &t) {
  std::string dims;
  for (int64_t d : t.toInts())
    dims += (dims.empty() ? "" : ",") + std::to_string(d);
  const Value *v = c.node.input(i);
  return (v ? "%" + v->name() + " " : std::string()) + "(= [" + dims + "])";
}

/// An error when the shape operand `i` folds to a negative size (other than
/// `allowed`, Reshape's -1).
llvm::Error checkNonNegative(const InferContext &c, size_t i, const Tensor &t, llvm::StringRef what,
                             int64_t allowed = 0) {
  for (int64_t d : t.toInts())
    if (d < 0 && d != allowed)
      return c.error(what + " " + foldedShape(c, i, t) + " has negative dimension " + llvm::Twine(d));
  return llvm::Error::success();
}

// ---- Reshape ---------------------------------------------------------------
llvm::Expected<Shape> reshapeTarget(const InferContext &c) {
  llvm::Error err = llvm::Error::success();
  const Tensor *shapeT = requireValue(c, 1, "the target shape", err);
  if (!shapeT)
    return std::move(err);
  llvm::consumeError(std::move(err));
  const Shape &in = c.type(0).shape;
  bool allowZero = c.node.intAttr("allowzero", 0) != 0;
  Shape out;
  int64_t inferred = -1, known = 1;
  for (int64_t i = 0; i < shapeT->numel(); ++i) {
    int64_t d = shapeT->intAt(i);
    if (d == 0 && !allowZero) {
      if (i >= static_cast<int64_t>(in.size()))
        return c.error("target shape copies dimension " + llvm::Twine(i) + " which the input lacks");
      d = in[i];
    }
    if (d == -1) {
      if (inferred >= 0)
        return c.error("target shape has more than one -1");
      inferred = i;
    } else if (d < 0) {
      return c.error("target shape " + foldedShape(c, 1, *shapeT) + " has negative dimension " + llvm::Twine(d) +
                     " (only -1, inferred, may be negative)");
    } else if (__builtin_mul_overflow(known, d, &known)) {
      return c.error("target shape " + foldedShape(c, 1, *shapeT) + " has more elements than 64 bits count");
    }
    out.push_back(d);
  }
  int64_t total = numElements(in);
  if (inferred >= 0) {
    if (known == 0 || total % known != 0)
      return c.error("cannot reshape " + shapeString(in) + " to " + shapeString(out));
    out[inferred] = total / known;
  } else if (known != total) {
    return c.error("cannot reshape " + shapeString(in) + " (" + llvm::Twine(total) +
                   " elements) to " + shapeString(out));
  }
  return out;
}

// ---- Slice -----------------------------------------------------------------
struct SliceSpec {
  Shape outShape;
  llvm::SmallVector<int64_t, 4> start, step;
};

llvm::Expected<SliceSpec> sliceSpec(const Shape &in, const Tensor &starts, const Tensor &ends,
                                    const Tensor *axes, const Tensor *steps,
                                    const InferContext *c) {
  SliceSpec s;
  s.outShape = in;
  s.start.assign(in.size(), 0);
  s.step.assign(in.size(), 1);
  int64_t rank = static_cast<int64_t>(in.size());
  int64_t n = starts.numel();
  if (ends.numel() != n || (axes && axes->numel() != n) || (steps && steps->numel() != n) || (!axes && n > rank)) {
    const char *msg = "slice starts, ends, axes and steps must have one entry per sliced axis";
    return c ? c->error(msg) : llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
  }
  for (int64_t k = 0; k < n; ++k) {
    int64_t axis = axes ? normalizeAxis(axes->intAt(k), rank) : k;
    if (axis < 0)
      return c ? c->error("slice axis out of range")
               : llvm::createStringError(llvm::inconvertibleErrorCode(), "slice axis out of range");
    int64_t dim = in[axis], step = steps ? steps->intAt(k) : 1;
    if (step == 0)
      return c ? c->error("slice step is zero")
               : llvm::createStringError(llvm::inconvertibleErrorCode(), "slice step is zero");
    int64_t b = starts.intAt(k), e = ends.intAt(k);
    if (b < 0) b += dim;
    if (e < 0) e += dim;
    // ceil(span / stride) without overflow (the bounds are clamped to the
    // dimension, the step may be any int64).
    auto count = [](int64_t span, int64_t stride) { return span > 0 ? (span - 1) / stride + 1 : 0; };
    if (dim == 0) {
      b = 0;
      s.outShape[axis] = 0;
    } else if (step > 0) {
      b = std::clamp<int64_t>(b, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
      s.outShape[axis] = count(e - b, step);
    } else {
      b = std::clamp<int64_t>(b, 0, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
      s.outShape[axis] = count(b - e, step == INT64_MIN ? INT64_MAX : -step);
    }
    s.start[axis] = b;
    s.step[axis] = step;
  }
  return s;
}

llvm::Error inferSlice(const InferContext &c, std::vector<TensorType> &o) {
  if (!c.value(1) || !c.value(2) || (c.has(3) && !c.value(3)) || (c.has(4) && !c.value(4)))
    return c.error("slice bounds are not compile-time constants; fix dynamic input dimensions "
                   "with --input-shape");
  auto spec = sliceSpec(c.type(0).shape, *c.value(1), *c.value(2), c.value(3), c.value(4), &c);
  if (!spec)
    return spec.takeError();
  o.push_back(TensorType{c.type(0).dtype, spec->outShape, true});
  return llvm::Error::success();
}

Result evalSlice(const Node &, llvm::ArrayRef<Tensor> in) {
  auto spec = sliceSpec(in[0].shape(), in[1], in[2], in.size() > 3 ? &in[3] : nullptr,
                        in.size() > 4 ? &in[4] : nullptr, nullptr);
  if (!spec)
    return spec.takeError();
  auto strides = stridesOf(in[0].shape());
  return std::vector<Tensor>{remap(in[0], spec->outShape, [&](int64_t i) {
    auto idx = unravel(i, spec->outShape);
    int64_t src = 0;
    for (size_t d = 0; d < idx.size(); ++d)
      src += (spec->start[d] + idx[d] * spec->step[d]) * strides[d];
    return src;
  })};
}

// ---- Gather ----------------------------------------------------------------
llvm::Error inferGather(const InferContext &c, std::vector<TensorType> &o) {
  const Shape &data = c.type(0).shape;
  int64_t axis = normalizeAxis(c.node.intAttr("axis", 0), static_cast<int64_t>(data.size()));
  if (axis < 0)
    return c.error("axis out of range for rank " + llvm::Twine(data.size()));
  if (c.type(1).dtype != DType::I64 && c.type(1).dtype != DType::I32)
    return c.error("indices must be i32 or i64");
  Shape out(data.begin(), data.begin() + axis);
  out.append(c.type(1).shape.begin(), c.type(1).shape.end());
  out.append(data.begin() + axis + 1, data.end());
  o.push_back(TensorType{c.type(0).dtype, out, true});
  return llvm::Error::success();
}

Result evalGather(const Node &n, llvm::ArrayRef<Tensor> in) {
  const Shape &data = in[0].shape();
  int64_t axis = normalizeAxis(n.intAttr("axis", 0), static_cast<int64_t>(data.size()));
  int64_t inner = numElements(llvm::ArrayRef<int64_t>(data).drop_front(axis + 1));
  int64_t count = in[1].numel(), dim = data[axis];
  Shape out(data.begin(), data.begin() + axis);
  out.append(in[1].shape().begin(), in[1].shape().end());
  out.append(data.begin() + axis + 1, data.end());
  for (int64_t k = 0; k < count; ++k) {
    int64_t j = in[1].intAt(k);
    if (j < -dim || j >= dim)
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "node " + n.describe() + ": index " + llvm::Twine(j) +
                                         " out of range for dimension " + llvm::Twine(dim));
  }
  return std::vector<Tensor>{remap(in[0], out, [&](int64_t i) {
    int64_t r = i % inner, rest = i / inner;
    int64_t k = rest % count, o = rest / count;
    int64_t j = in[1].intAt(k);
    if (j < 0)
      j += dim;
    return (o * dim + j) * inner + r;
  })};
}

// ---- Transpose -------------------------------------------------------------

llvm::Error inferTranspose(const InferContext &c, std::vector<TensorType> &o) {
  const Shape &in = c.type(0).shape;
  auto perm = transposePerm(c.node);
  if (perm.size() != in.size())
    return c.error("perm has " + llvm::Twine(perm.size()) + " entries for rank " +
                   llvm::Twine(in.size()));
  std::vector<bool> seen(in.size(), false);
  Shape out;
  for (int64_t p : perm) {
    if (p < 0 || p >= static_cast<int64_t>(in.size()) || seen[p])
      return c.error("perm is not a permutation");
    seen[p] = true;
    out.push_back(in[p]);
  }
  o.push_back(TensorType{c.type(0).dtype, out, true});
  return llvm::Error::success();
}

Result evalTranspose(const Node &n, llvm::ArrayRef<Tensor> in) {
  const Shape &s = in[0].shape();
  auto perm = transposePerm(n);
  Shape out;
  for (int64_t p : perm)
    out.push_back(s[p]);
  auto strides = stridesOf(s);
  return std::vector<Tensor>{remap(in[0], out, [&](int64_t i) {
    auto idx = unravel(i, out);
    int64_t src = 0;
    for (size_t d = 0; d < idx.size(); ++d)
      src += idx[d] * strides[perm[d]];
    return src;
  })};
}

// ---- (Un)Squeeze ------------------------------------------------------------
llvm::Expected<Shape> squeezeShape(const Node &n, const Shape &in, const Tensor *axesT,
                                   bool unsqueeze) {
  auto fail = [&](const llvm::Twine &m) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "node " + n.describe() + ": " + m);
  };
  std::vector<int64_t> axes = axesT ? axesT->toInts() : n.intsAttr("axes");
  if (unsqueeze) {
    int64_t rank = static_cast<int64_t>(in.size() + axes.size());
    std::vector<bool> inserted(rank, false);
    for (int64_t a : axes) {
      int64_t ax = normalizeAxis(a, rank);
      if (ax < 0 || inserted[ax])
        return fail("bad unsqueeze axis " + llvm::Twine(a));
      inserted[ax] = true;
    }
    Shape out;
    size_t k = 0;
    for (int64_t i = 0; i < rank; ++i)
      out.push_back(inserted[i] ? 1 : in[k++]);
    return out;
  }
  int64_t rank = static_cast<int64_t>(in.size());
  std::vector<bool> drop(rank, false);
  if (axes.empty()) {
    for (int64_t i = 0; i < rank; ++i)
      drop[i] = in[i] == 1;
  }
  for (int64_t a : axes) {
    int64_t ax = normalizeAxis(a, rank);
    if (ax < 0 || in[ax] != 1)
      return fail("cannot squeeze axis " + llvm::Twine(a) + " of shape " + shapeString(in));
    drop[ax] = true;
  }
  Shape out;
  for (int64_t i = 0; i < rank; ++i)
    if (!drop[i])
      out.push_back(in[i]);
  return out;
}

OpInfo squeezeOp(bool unsqueeze) {
  return OpInfo{[unsqueeze](const InferContext &c, std::vector<TensorType> &o) -> llvm::Error {
                  if (c.has(1) && !c.value(1))
                    return c.error("axes are not a compile-time constant");
                  auto s = squeezeShape(c.node, c.type(0).shape, c.value(1), unsqueeze);
                  if (!s)
                    return s.takeError();
                  o.push_back(TensorType{c.type(0).dtype, *s, true});
                  return llvm::Error::success();
                },
                [unsqueeze](const Node &n, llvm::ArrayRef<Tensor> in) -> Result {
                  auto s = squeezeShape(n, in[0].shape(), in.size() > 1 ? &in[1] : nullptr, unsqueeze);
                  if (!s)
                    return s.takeError();
                  return std::vector<Tensor>{withShape(in[0], *s)};
                },
                1, 2};
}

// ---- Concat / Split ---------------------------------------------------------
llvm::Error inferConcat(const InferContext &c, std::vector<TensorType> &o) {
  Shape out = c.type(0).shape;
  int64_t axis = normalizeAxis(c.node.intAttr("axis", 0), static_cast<int64_t>(out.size()));
  if (axis < 0)
    return c.error("axis out of range");
  for (size_t i = 1; i < c.types.size(); ++i) {
    const Shape &s = c.type(i).shape;
    if (c.type(i).dtype != c.type(0).dtype) // evalConcat copies every input with input 0's element size
      return c.error("inputs have different element types (" + dtypeName(c.type(0).dtype) + " and " +
                     dtypeName(c.type(i).dtype) + ")");
    if (s.size() != out.size())
      return c.error("inputs have different ranks");
    for (size_t d = 0; d < s.size(); ++d)
      if (static_cast<int64_t>(d) != axis && s[d] != out[d])
        return c.error("input shapes " + shapeString(out) + " and " + shapeString(s) +
                       " differ outside the concat axis");
    out[axis] += s[axis];
  }
  o.push_back(TensorType{c.type(0).dtype, out, true});
  return llvm::Error::success();
}

Result evalConcat(const Node &n, llvm::ArrayRef<Tensor> in) {
  Shape out = in[0].shape();
  int64_t axis = normalizeAxis(n.intAttr("axis", 0), static_cast<int64_t>(out.size()));
  out[axis] = 0;
  for (const auto &t : in)
    out[axis] += t.shape()[axis];
  int64_t inner = numElements(llvm::ArrayRef<int64_t>(out).drop_front(axis + 1));
  int64_t outer = numElements(llvm::ArrayRef<int64_t>(out).take_front(axis));
  size_t es = dtypeSize(in[0].dtype());
  auto bytes = std::make_shared<std::vector<uint8_t>>(numElements(out) * es);
  uint8_t *dst = bytes->data();
  for (int64_t o = 0; o < outer; ++o)
    for (const auto &t : in) {
      size_t chunk = static_cast<size_t>(t.shape()[axis] * inner) * es;
      if (chunk == 0)
        continue; // an empty input's data() may be null, which memcpy must not get
      std::memcpy(dst, t.data() + o * chunk, chunk);
      dst += chunk;
    }
  return std::vector<Tensor>{Tensor(in[0].dtype(), out, std::move(bytes))};
}

llvm::Expected<std::vector<int64_t>> splitSizes(const InferContext &c) {
  const Shape &in = c.type(0).shape;
  int64_t axis = normalizeAxis(c.node.intAttr("axis", 0), static_cast<int64_t>(in.size()));
  if (axis < 0)
    return c.error("axis out of range");
  std::vector<int64_t> sizes;
  if (c.has(1)) {
    if (!c.value(1))
      return c.error("split sizes are not a compile-time constant");
    sizes = c.value(1)->toInts();
  } else if (c.node.hasAttr("split")) {
    sizes = c.node.intsAttr("split");
  } else {
    int64_t parts = static_cast<int64_t>(c.node.numOutputs());
    if (in[axis] % parts != 0)
      return c.error("dimension " + llvm::Twine(in[axis]) + " does not split evenly into " +
                     llvm::Twine(parts));
    sizes.assign(parts, in[axis] / parts);
  }
  if (sizes.size() != c.node.numOutputs() ||
      std::accumulate(sizes.begin(), sizes.end(), int64_t{0}) != in[axis])
    return c.error("split sizes do not match the outputs and dimension " + llvm::Twine(in[axis]));
  return sizes;
}

llvm::Error inferSplit(const InferContext &c, std::vector<TensorType> &o) {
  auto sizes = splitSizes(c);
  if (!sizes)
    return sizes.takeError();
  int64_t axis = normalizeAxis(c.node.intAttr("axis", 0), c.type(0).rank());
  for (int64_t s : *sizes) {
    TensorType t = c.type(0);
    t.shape[axis] = s;
    o.push_back(t);
  }
  return llvm::Error::success();
}

Result evalSplit(const Node &n, llvm::ArrayRef<Tensor> in) {
  const Shape &s = in[0].shape();
  int64_t axis = normalizeAxis(n.intAttr("axis", 0), static_cast<int64_t>(s.size()));
  std::vector<int64_t> sizes = in.size() > 1 ? in[1].toInts() : n.intsAttr("split");
  if (sizes.empty())
    sizes.assign(n.numOutputs(), s[axis] / static_cast<int64_t>(n.numOutputs()));
  int64_t inner = numElements(llvm::ArrayRef<int64_t>(s).drop_front(axis + 1));
  std::vector<Tensor> outs;
  int64_t offset = 0;
  for (int64_t len : sizes) {
    Shape os = s;
    os[axis] = len;
    outs.push_back(remap(in[0], os, [&](int64_t i) {
      int64_t r = i % inner, rest = i / inner, k = rest % len, o = rest / len;
      return (o * s[axis] + offset + k) * inner + r;
    }));
    offset += len;
  }
  return outs;
}

// ---- Expand / ConstantOfShape / Range / Shape ---------------------------------
llvm::Error inferExpand(const InferContext &c, std::vector<TensorType> &o) {
  llvm::Error err = llvm::Error::success();
  const Tensor *shapeT = requireValue(c, 1, "the expand shape", err);
  if (!shapeT)
    return err;
  llvm::consumeError(std::move(err));
  if (auto bad = checkNonNegative(c, 1, *shapeT, "the expand shape"))
    return bad;
  auto target = shapeT->toInts();
  auto out = broadcastShapes({c.type(0).shape, Shape(target.begin(), target.end())});
  if (!out)
    return c.error("cannot expand " + shapeString(c.type(0).shape) + " to " +
                   shapeString(Shape(target.begin(), target.end())));
  o.push_back(TensorType{c.type(0).dtype, *out, true});
  return llvm::Error::success();
}

Result evalExpand(const Node &, llvm::ArrayRef<Tensor> in) {
  auto target = in[1].toInts();
  Shape out = *broadcastShapes({in[0].shape(), Shape(target.begin(), target.end())});
  BroadcastIndexer idx(in[0].shape(), out);
  return std::vector<Tensor>{remap(in[0], out, [&](int64_t i) { return idx(i); })};
}

Tensor constantOfShapeFill(const Node &n) {
  const Attribute *a = n.attr("value");
  return a && a->kind == Attribute::TensorValue ? a->tensor
                                                : Tensor::fromDoubles(DType::F32, {1}, {0.0});
}

llvm::Error inferConstantOfShape(const InferContext &c, std::vector<TensorType> &o) {
  llvm::Error err = llvm::Error::success();
  const Tensor *shapeT = requireValue(c, 0, "the output shape", err);
  if (!shapeT)
    return err;
  llvm::consumeError(std::move(err));
  if (auto bad = checkNonNegative(c, 0, *shapeT, "the output shape"))
    return bad;
  auto dims = shapeT->toInts();
  o.push_back(TensorType{constantOfShapeFill(c.node).dtype(), Shape(dims.begin(), dims.end()), true});
  return llvm::Error::success();
}

int64_t rangeCount(double start, double limit, double delta) {
  return std::max<int64_t>(0, static_cast<int64_t>(std::ceil((limit - start) / delta)));
}

llvm::Error inferRange(const InferContext &c, std::vector<TensorType> &o) {
  if (!c.value(0) || !c.value(1) || !c.value(2))
    return c.error("start, limit and delta must be compile-time constants");
  double d = c.value(2)->at(0);
  if (d == 0)
    return c.error("delta is zero");
  o.push_back(TensorType{c.type(0).dtype, {rangeCount(c.value(0)->at(0), c.value(1)->at(0), d)}, true});
  return llvm::Error::success();
}

Result evalRange(const Node &, llvm::ArrayRef<Tensor> in) {
  double s = in[0].at(0), l = in[1].at(0), d = in[2].at(0);
  int64_t n = rangeCount(s, l, d);
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    v[i] = s + static_cast<double>(i) * d;
  return std::vector<Tensor>{Tensor::fromDoubles(in[0].dtype(), {n}, v)};
}

std::pair<int64_t, int64_t> shapeBounds(const Node &n, int64_t rank) {
  int64_t start = n.intAttr("start", 0), end = n.intAttr("end", rank);
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, start, rank);
  return {start, end};
}

} // namespace

void registerShapeOps(OpRegistry &r) {
  r.add("Shape", OpInfo{[](const InferContext &c, std::vector<TensorType> &o) -> llvm::Error {
                          auto [b, e] = shapeBounds(c.node, c.type(0).rank());
                          o.push_back(TensorType{DType::I64, {e - b}, true});
                          return llvm::Error::success();
                        },
                        [](const Node &n, llvm::ArrayRef<Tensor> in) -> Result {
                          const Shape &s = in[0].shape();
                          auto [b, e] = shapeBounds(n, static_cast<int64_t>(s.size()));
                          return std::vector<Tensor>{Tensor::fromInts(
                              DType::I64, {e - b}, llvm::ArrayRef<int64_t>(s).slice(b, e - b))};
                        },
                        1, 1})
      .with(OpTrait::ShapeOnly);
  r.add("Size", OpInfo{[](const InferContext &c, std::vector<TensorType> &o) -> llvm::Error {
                         o.push_back(TensorType{DType::I64, {}, true});
                         return llvm::Error::success();
                       },
                       [](const Node &, llvm::ArrayRef<Tensor> in) -> Result {
                         return std::vector<Tensor>{Tensor::fromInts(DType::I64, {}, {in[0].numel()})};
                       },
                       1, 1})
      .with(OpTrait::ShapeOnly);
  r.add("Reshape", OpInfo{[](const InferContext &c, std::vector<TensorType> &o) -> llvm::Error {
                            auto s = reshapeTarget(c);
                            if (!s)
                              return s.takeError();
                            o.push_back(TensorType{c.type(0).dtype, *s, true});
                            return llvm::Error::success();
                          },
                          [](const Node &n, llvm::ArrayRef<Tensor> in) -> Result {
                            InferContext c{n, {}, {&in[1]}, 0};
                            TensorType t = in[0].type();
                            c.types = {&t, nullptr};
                            c.values = {nullptr, &in[1]};
                            auto s = reshapeTarget(c);
                            if (!s)
                              return s.takeError();
                            return std::vector<Tensor>{withShape(in[0], *s)};
                          },
                          2, 2})
      .with(OpTrait::View | OpTrait::MovesElements);
  r.add("Transpose", OpInfo{inferTranspose, evalTranspose, 1, 1}).with(OpTrait::MovesElements);
  r.add("Flatten", OpInfo{[](const InferContext &c, std::vector<TensorType> &o) -> llvm::Error {
                            const Shape &s = c.type(0).shape;
                            int64_t rank = static_cast<int64_t>(s.size());
                            int64_t axis = c.node.intAttr("axis", 1);
                            if (axis < -rank || axis > rank)
                              return c.error("axis " + llvm::Twine(axis) + " out of range for rank " + llvm::Twine(rank));
                            if (axis < 0)
                              axis += rank;
                            int64_t outer = numElements(llvm::ArrayRef<int64_t>(s).take_front(axis));
                            o.push_back(TensorType{c.type(0).dtype, {outer, numElements(s) / std::max<int64_t>(outer, 1)}, true});
                            if (outer == 0)
                              o.back().shape[1] = numElements(llvm::ArrayRef<int64_t>(s).drop_front(axis));
                            return llvm::Error::success();
                          },
                          [](const Node &n, llvm::ArrayRef<Tensor> in) -> Result {
                            const Shape &s = in[0].shape();
                            int64_t rank = static_cast<int64_t>(s.size()), axis = n.intAttr("axis", 1);
                            if (axis < 0)
                              axis += rank;
                            int64_t outer = numElements(llvm::ArrayRef<int64_t>(s).take_front(axis));
                            int64_t inner = numElements(llvm::ArrayRef<int64_t>(s).drop_front(axis));
                            return std::vector<Tensor>{withShape(in[0], {outer, inner})};
                          },
                          1, 1})
      .with(OpTrait::View | OpTrait::MovesElements);
  r.add("Unsqueeze", squeezeOp(true)).with(OpTrait::View | OpTrait::MovesElements);
  r.add("Squeeze", squeezeOp(false)).with(OpTrait::View | OpTrait::MovesElements);
  r.add("Concat", OpInfo{inferConcat, evalConcat, 1, -1}).with(OpTrait::MovesElements);
  r.add("Split", OpInfo{inferSplit, evalSplit, 1, 2}).with(OpTrait::MovesElements);
  r.add("Slice", OpInfo{inferSlice, evalSlice, 3, 5}).with(OpTrait::MovesElements);
  r.add("Gather", OpInfo{inferGather, evalGather, 2, 2}).with(OpTrait::MovesElements);
  r.add("Expand", OpInfo{inferExpand, evalExpand, 2, 2}).with(OpTrait::MovesElements);
  r.add("ConstantOfShape",
        OpInfo{inferConstantOfShape,
               [](const Node &n, llvm::ArrayRef<Tensor> in) -> Result {
                 auto dims = in[0].toInts();
                 Shape s(dims.begin(), dims.end());
                 Tensor fill = constantOfShapeFill(n);
                 return std::vector<Tensor>{remap(fill, s, [](int64_t) { return int64_t{0}; })};
               },
               1, 1});
  r.add("Range", OpInfo{inferRange, evalRange, 3, 3});
  r.add("Constant", OpInfo{[](const InferContext &c, std::vector<TensorType> &o) -> llvm::Error {
                             const Attribute *a = c.node.attr("value");
                             if (!a || a->kind != Attribute::TensorValue)
                               return c.error("Constant needs a tensor 'value' attribute");
                             o.push_back(a->tensor.type());
                             return llvm::Error::success();
                           },
                           [](const Node &n, llvm::ArrayRef<Tensor>) -> Result {
                             return std::vector<Tensor>{n.attr("value")->tensor};
                           },
                           0, 0})
      .with(OpTrait::Source);
  // A weight's type is fixed where it is declared (initializer or text IR).
  r.add("Weight", OpInfo{[](const InferContext &c, std::vector<TensorType> &o) -> llvm::Error {
                           o.push_back(c.node.output()->type());
                           return llvm::Error::success();
                         },
                         {}, 0, 0})
      .with(OpTrait::Source);
}

} // namespace partita
