//===- ConvOp.cpp - Conv (N-D, groups, strides, pads, dilations) ----------===//
//
// Vision transformers embed patches with a Conv whose stride equals its
// kernel. Inference follows the ONNX definition (explicit pads or auto_pad);
// the evaluator is a direct convolution used by folding and the reference CPU
// kernel.
//===----------------------------------------------------------------------===//
#include "compiler/ops/OpRegistry.h"

namespace partita {

namespace {

struct ConvGeometry {
  int64_t spatial = 0, groups = 1;
  std::vector<int64_t> kernel, strides, dilations, padBegin, out;
};

llvm::Expected<ConvGeometry> geometry(const Node &n, const Shape &x, const Shape &w) {
  auto fail = [&](const llvm::Twine &m) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "node " + n.describe() + ": " + m);
  };
  if (x.size() < 3 || w.size() != x.size())
    return fail("input and weight must have the same rank >= 3");
  ConvGeometry g;
  g.spatial = static_cast<int64_t>(x.size()) - 2;
  g.groups = n.intAttr("group", 1);
  if (g.groups < 1 || x[1] != w[1] * g.groups || w[0] % g.groups)
    return fail("channels " + llvm::Twine(x[1]) + " do not match weight " + shapeString(w) + " with " +
                llvm::Twine(g.groups) + " groups");
  auto attr = [&](const char *name, int64_t dflt) {
    std::vector<int64_t> v = n.intsAttr(name);
    if (v.empty())
      v.assign(g.spatial, dflt);
    return v;
  };
  g.kernel.assign(w.begin() + 2, w.end());
  g.strides = attr("strides", 1);
  g.dilations = attr("dilations", 1);
  std::vector<int64_t> pads = n.intsAttr("pads");
  if (pads.empty())
    pads.assign(2 * g.spatial, 0);
  // Each per-dimension attribute holds one value per spatial dimension (pads two).
  if (static_cast<int64_t>(g.strides.size()) != g.spatial ||
      static_cast<int64_t>(g.dilations.size()) != g.spatial || static_cast<int64_t>(pads.size()) != 2 * g.spatial)
    return fail("weight " + shapeString(w) + ", strides, dilations and pads do not match the input's " +
                llvm::Twine(g.spatial) + " spatial dimension(s)");
  for (int64_t d = 0; d < g.spatial; ++d)
    if (g.strides[d] < 1 || g.dilations[d] < 1 || g.kernel[d] < 1 || pads[d] < 0 || pads[d + g.spatial] < 0)
      return fail("strides, dilations and kernel sizes must be positive and pads non-negative");
  std::string autoPad = n.stringAttr("auto_pad", "NOTSET");
  for (int64_t d = 0; d < g.spatial; ++d) {
    int64_t in = x[d + 2], k = (g.kernel[d] - 1) * g.dilations[d] + 1, s = g.strides[d];
    if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
      int64_t o = (in + s - 1) / s, total = std::max<int64_t>(0, (o - 1) * s + k - in);
      pads[d] = autoPad == "SAME_UPPER" ? total / 2 : total - total / 2;
      pads[d + g.spatial] = total - pads[d];
    } else if (autoPad == "VALID") {
      pads[d] = pads[d + g.spatial] = 0;
    }
    int64_t o = (in + pads[d] + pads[d + g.spatial] - k) / s + 1;
    if (o < 1)
      return fail("kernel larger than the padded input");
    g.out.push_back(o);
    g.padBegin.push_back(pads[d]);
  }
  return g;
}

} // namespace

void registerConvOp(OpRegistry &r) {
  r.add("Conv",
        OpInfo{[](const InferContext &c, std::vector<TensorType> &o) -> llvm::Error {
                 auto g = geometry(c.node, c.type(0).shape, c.type(1).shape);
                 if (!g)
                   return g.takeError();
                 Shape out = {c.type(0).shape[0], c.type(1).shape[0]};
                 out.append(g->out.begin(), g->out.end());
                 o.push_back(TensorType{c.type(0).dtype, out, true});
                 return llvm::Error::success();
               },
               [](const Node &n, llvm::ArrayRef<Tensor> in) -> llvm::Expected<std::vector<Tensor>> {
                 const Shape &xs = in[0].shape(), &ws = in[1].shape();
                 auto g = geometry(n, xs, ws);
                 if (!g)
                   return g.takeError();
                 std::vector<double> x = in[0].toDoubles(), w = in[1].toDoubles();
                 std::vector<double> b = in.size() > 2 ? in[2].toDoubles() : std::vector<double>();
                 int64_t batch = xs[0], cin = xs[1], cout = ws[0], cinG = cin / g->groups, coutG = cout / g->groups;
                 Shape outShape = {batch, cout};
                 outShape.append(g->out.begin(), g->out.end());
                 int64_t outSpatial = numElements(g->out), kSpatial = numElements(g->kernel);
                 int64_t inSpatial = numElements(llvm::ArrayRef<int64_t>(xs).drop_front(2));
                 std::vector<double> y(static_cast<size_t>(numElements(outShape)), 0.0);
                 std::vector<int64_t> opos(g->spatial), kpos(g->spatial);
                 for (int64_t nb = 0; nb < batch; ++nb)
                   for (int64_t co = 0; co < cout; ++co) {
                     int64_t grp = co / coutG;
                     for (int64_t op = 0; op < outSpatial; ++op) {
                       int64_t rem = op;
                       for (int64_t d = g->spatial - 1; d >= 0; --d) {
                         opos[d] = rem % g->out[d];
                         rem /= g->out[d];
                       }
                       double acc = b.empty() ? 0.0 : b[co];
                       for (int64_t ci = 0; ci < cinG; ++ci)
                         for (int64_t kp = 0; kp < kSpatial; ++kp) {
                           int64_t krem = kp, inOff = 0;
                           bool inside = true;
                           for (int64_t d = g->spatial - 1; d >= 0; --d) {
                             kpos[d] = krem % g->kernel[d];
                             krem /= g->kernel[d];
                           }
                           for (int64_t d = 0; d < g->spatial; ++d) {
                             int64_t p = opos[d] * g->strides[d] - g->padBegin[d] + kpos[d] * g->dilations[d];
                             inside &= p >= 0 && p < xs[d + 2];
                             inOff = inOff * xs[d + 2] + p;
                           }
                           if (!inside)
                             continue;
                           acc += x[(nb * cin + grp * cinG + ci) * inSpatial + inOff] *
                                  w[(co * cinG + ci) * kSpatial + kp];
                         }
                       y[(nb * cout + co) * outSpatial + op] = acc;
                     }
                   }
                 return std::vector<Tensor>{Tensor::fromDoubles(in[0].dtype(), outShape, y)};
               },
               2, 3})
      .with(OpTrait::Contraction);
}

} // namespace partita
