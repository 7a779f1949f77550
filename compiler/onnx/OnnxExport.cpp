//===- OnnxExport.cpp -----------------------------------------------------===//
#include "compiler/onnx/OnnxExport.h"
#include "compiler/ops/OpRegistry.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/SHA256.h"
#include "compiler/support/OutputFile.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"
#include "onnx/onnx_pb.h"
#include <optional>
#include <set>

namespace partita {

namespace {

llvm::Error fail(llvm::StringRef path, const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), path + ": " + msg);
}

void setType(onnx::ValueInfoProto &vi, const Value *v) {
  vi.set_name(v->name());
  auto *tt = vi.mutable_type()->mutable_tensor_type();
  tt->set_elem_type(dtypeToOnnx(v->type().dtype));
  auto *shape = tt->mutable_shape();
  for (int64_t d : v->type().shape)
    shape->add_dim()->set_dim_value(d);
}

void fillTensor(onnx::TensorProto &t, const std::string &name, const Tensor &value) {
  t.set_name(name);
  t.set_data_type(dtypeToOnnx(value.dtype()));
  for (int64_t d : value.shape())
    t.add_dims(d);
  t.set_raw_data(std::string(reinterpret_cast<const char *>(value.data()), value.byteSize()));
}

/// An initializer whose bytes are `length` bytes at `offset` of `location`.
void setExternal(onnx::TensorProto &t, const std::string &name, const TensorType &type, const std::string &location,
                 uint64_t offset, uint64_t length) {
  t.set_name(name);
  t.set_data_type(dtypeToOnnx(type.dtype));
  for (int64_t d : type.shape)
    t.add_dims(d);
  t.set_data_location(onnx::TensorProto::EXTERNAL);
  auto kv = [&](const char *k, const std::string &v) {
    auto *e = t.add_external_data();
    e->set_key(k);
    e->set_value(v);
  };
  kv("location", location);
  kv("offset", std::to_string(offset));
  kv("length", std::to_string(length));
}

std::string joinInts(llvm::ArrayRef<int64_t> v) {
  std::string s;
  for (int64_t x : v)
    s += (s.empty() ? "" : ",") + std::to_string(x);
  return s;
}

/// The weight as a reference to its bytes in the model's own external data
/// file (ExportOptions::weightsByReference).
void writeReference(onnx::TensorProto &t, const std::string &name, const WeightRef &part) {
  // A flat part (ZeRO) refers to its weight's bytes as the weight would, and
  // says which range of its flat buffer it is: loaded as WeightStore does.
  const WeightRef ref = part.unflattened();
  size_t elem = dtypeSize(ref.type.dtype);
  std::string file = absoluteWeightFile(ref.file); // the program lives elsewhere: the location is absolute
  const Shape &stored = ref.storedShape.empty() ? ref.type.shape : ref.storedShape;
  bool permuted = false;
  for (size_t d = 0; d < ref.perm.size(); ++d)
    permuted |= ref.perm[d] != static_cast<int64_t>(d);
  // A box of the stored tensor is one run of bytes when it is a block of
  // whole rows: dims before the first partial one have size 1, later ones
  // are whole.
  bool contiguous = !permuted && !part.flat;
  int64_t first = 0;
  if (contiguous && !ref.viewStart.empty()) {
    size_t k = 0;
    while (k < stored.size() && ref.type.shape[k] == 1)
      ++k;
    for (size_t d = k + 1; d < stored.size(); ++d)
      contiguous &= ref.viewStart[d] == 0 && ref.type.shape[d] == stored[d];
    for (size_t d = 0, stride = 1; d < stored.size(); ++d) {
      size_t r = stored.size() - 1 - d;
      first += ref.viewStart[r] * static_cast<int64_t>(stride);
      stride *= static_cast<size_t>(stored[r]);
    }
  }
  uint64_t numel = static_cast<uint64_t>(numElements(ref.type.shape));
  auto kv = [&](const char *k, const std::string &v) {
    auto *e = t.add_external_data();
    e->set_key(k);
    e->set_value(v);
  };
  // A half parameter (WeightRef::loadAs) declares the type it is held in
  // and says its bytes are the stored float32 ones.
  auto held = [&] {
    if (!ref.loadAs)
      return;
    t.set_data_type(dtypeToOnnx(*ref.loadAs));
    kv("partita_stored_type", std::to_string(dtypeToOnnx(ref.type.dtype)));
  };
  if (contiguous) {
    setExternal(t, name, ref.type, file, ref.offset + static_cast<uint64_t>(first) * elem, numel * elem);
    held();
    return;
  }
  setExternal(t, name, part.flat ? part.type : ref.type, file, ref.offset,
              static_cast<uint64_t>(numElements(stored)) * elem);
  held();
  if (part.flat) {
    const FlatPart &f = *part.flat;
    kv("partita_flat", joinInts({f.dim, f.blocks, f.length, f.start}));
    kv("partita_flat_shape", joinInts(f.shape));
    if (!f.byAxis.empty())
      kv("partita_flat_block", f.byAxis + "," + std::to_string(f.stride));
  }
  kv("partita_stored_shape", joinInts(stored)); // (with a flat part: its weight's)
  if (!ref.viewStart.empty())
    kv("partita_view_start", joinInts(ref.viewStart));
  if (permuted)
    kv("partita_perm", joinInts(ref.perm));
}

void exportAttribute(onnx::AttributeProto &a, const std::string &name, const Attribute &attr) {
  a.set_name(name);
  switch (attr.kind) {
  case Attribute::Int: a.set_type(onnx::AttributeProto::INT); a.set_i(attr.i); break;
  case Attribute::Float: a.set_type(onnx::AttributeProto::FLOAT); a.set_f(static_cast<float>(attr.f)); break;
  case Attribute::String: a.set_type(onnx::AttributeProto::STRING); a.set_s(attr.s); break;
  case Attribute::Ints:
    a.set_type(onnx::AttributeProto::INTS);
    for (int64_t v : attr.ints) a.add_ints(v);
    break;
  case Attribute::Floats:
    a.set_type(onnx::AttributeProto::FLOATS);
    for (double v : attr.floats) a.add_floats(static_cast<float>(v));
    break;
  case Attribute::Strings:
    a.set_type(onnx::AttributeProto::STRINGS);
    for (const auto &s : attr.strings) a.add_strings(s);
    break;
  case Attribute::TensorValue:
    a.set_type(onnx::AttributeProto::TENSOR);
    fillTensor(*a.mutable_t(), "", attr.tensor);
    break;
  }
}

// ---- model-local functions defining Partita's canonical ops ----------------
struct FunctionBuilder {
  onnx::FunctionProto &f;
  int counter = 0;

  std::string node(const std::string &op, std::vector<std::string> ins, std::string out = "") {
    if (out.empty())
      out = "t" + std::to_string(counter++);
    auto *n = f.add_node();
    n->set_op_type(op);
    for (auto &i : ins)
      n->add_input(i);
    n->add_output(out);
    return out;
  }
  /// The last node made gets an attribute.
  onnx::AttributeProto &attr(const std::string &name) {
    auto *a = f.mutable_node(f.node_size() - 1)->add_attribute();
    a->set_name(name);
    return *a;
  }
  std::string ints(std::vector<int64_t> v) {
    std::string c = node("Constant", {});
    auto &a = attr("value_ints");
    a.set_type(onnx::AttributeProto::INTS);
    for (int64_t x : v)
      a.add_ints(x);
    return c;
  }
  /// A scalar constant cast to the input's element type.
  std::string scalar(double v, const std::string &like) {
    std::string c = "t" + std::to_string(counter++);
    auto *n = f.add_node();
    n->set_op_type("Constant");
    n->add_output(c);
    auto *a = n->add_attribute();
    a->set_name("value_float");
    a->set_type(onnx::AttributeProto::FLOAT);
    a->set_f(static_cast<float>(v));
    return node("CastLike", {c, like});
  }
};

void addFunction(onnx::ModelProto &m, const std::string &name, int64_t opset) {
  auto *f = m.add_functions();
  f->set_name(name);
  f->set_domain("partita");
  auto *imp = f->add_opset_import();
  imp->set_domain("");
  imp->set_version(opset);
  FunctionBuilder b{*f};
  if (name == "Linear") {
    for (const char *i : {"X", "W", "B"})
      f->add_input(i);
    f->add_output("Y");
    b.node("Add", {b.node("MatMul", {"X", "W"}), "B"}, "Y");
  } else if (name == "Gelu") { // 0.5 x (1 + erf(x / sqrt 2))
    f->add_input("X");
    f->add_output("Y");
    std::string e = b.node("Erf", {b.node("Div", {"X", b.scalar(1.4142135623730951, "X")})});
    std::string h = b.node("Mul", {"X", b.node("Add", {e, b.scalar(1.0, "X")})});
    b.node("Mul", {h, b.scalar(0.5, "X")}, "Y");
  } else if (name == "FastGelu") { // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
    f->add_input("X");
    f->add_output("Y");
    std::string x3 = b.node("Mul", {"X", b.node("Mul", {"X", "X"})});
    std::string inner = b.node("Add", {"X", b.node("Mul", {x3, b.scalar(0.044715, "X")})});
    std::string t = b.node("Tanh", {b.node("Mul", {inner, b.scalar(0.7978845608028654, "X")})});
    std::string h = b.node("Mul", {"X", b.node("Add", {t, b.scalar(1.0, "X")})});
    b.node("Mul", {h, b.scalar(0.5, "X")}, "Y");
  } else if (name == "EmbeddingGrad") { // ScatterND-add of dy rows into zeros, ids outside the block dropped
    for (const char *i : {"Table", "Ids", "Dy"})
      f->add_input(i);
    f->add_output("Y");
    f->add_attribute("offset");
    std::string off = b.node("Constant", {});
    auto &ref = b.attr("value_int");
    ref.set_type(onnx::AttributeProto::INT);
    ref.set_ref_attr_name("offset");
    std::string local = b.node("Sub", {"Ids", b.node("CastLike", {off, "Ids"})});
    std::string rows = b.node("CastLike", {b.node("Gather", {b.node("Shape", {"Table"}), b.ints({0})}), "Ids"});
    std::string zero = b.node("CastLike", {b.ints({0}), "Ids"});
    std::string valid = b.node("And", {b.node("GreaterOrEqual", {local, zero}), b.node("Less", {local, rows})});
    std::string idx = b.node("Unsqueeze", {b.node("Where", {valid, local, zero}), b.ints({-1})});
    std::string keep = b.node("CastLike", {b.node("Unsqueeze", {valid, b.ints({-1})}), "Dy"});
    std::string updates = b.node("Mul", {"Dy", keep});
    std::string zeros = b.node("CastLike", {b.node("ConstantOfShape", {b.node("Shape", {"Table"})}), "Table"});
    b.node("ScatterND", {zeros, idx, updates}, "Y");
    auto &red = b.attr("reduction");
    red.set_type(onnx::AttributeProto::STRING);
    red.set_s("add");
  }
}

} // namespace

llvm::Error exportOnnx(const Graph &g, llvm::StringRef path, const ExportOptions &opts) {
  onnx::ModelProto m;
  m.set_ir_version(8); // model-local functions need IR version 8
  m.set_producer_name("partita");
  int64_t opset = g.opset;
  std::set<std::string> partitaOps;
  for (const Node *n : g.nodes()) {
    if (n->is("LayerNormalization"))
      opset = std::max<int64_t>(opset, 17);
    // CastLike (opset 15) is used inside the function bodies.
    if (n->domain() == "partita") {
      partitaOps.insert(n->op());
      // CastLike (15) in the function bodies; ScatterND's reduction (16).
      opset = std::max<int64_t>(opset, n->op() == "EmbeddingGrad" ? 16 : 15);
    }
  }
  auto *imp = m.add_opset_import();
  imp->set_domain("");
  imp->set_version(opset);
  if (!partitaOps.empty()) {
    auto *p = m.add_opset_import();
    p->set_domain("partita");
    p->set_version(1);
    // Compute ops get ONNX function bodies; collectives, a pipeline's sends
    // and receives, the fused optimizer update, ZeRO's flat buffers, kv copies' sums and run-time slices stay
    // custom ops that Partita's runtime implements (each op's OnnxForm says which).
    for (const auto &op : partitaOps) {
      const OpInfo *info = OpRegistry::get().find("partita." + op);
      OnnxForm form = info ? info->onnx : OnnxForm::Lowered;
      if (form == OnnxForm::Function)
        addFunction(m, op, opset);
      else if (form != OnnxForm::Custom)
        return fail(path, "partita." + op + " cannot be exported (lower it first)");
    }
  }
  onnx::GraphProto &graph = *m.mutable_graph();
  graph.set_name(g.name);
  for (const Value *in : g.inputs())
    setType(*graph.add_input(), in);
  for (const Value *out : g.outputs())
    setType(*graph.add_output(), out);

  std::optional<OutputFile> dataOut;
  uint64_t dataOffset = 0;
  auto openData = [&]() -> llvm::Error {
    if (dataOut)
      return llvm::Error::success();
    llvm::SmallString<256> dataPath(llvm::sys::path::parent_path(path));
    llvm::sys::path::append(dataPath, opts.externalDataFile);
    auto file = OutputFile::create(dataPath);
    if (!file)
      return file.takeError();
    dataOut.emplace(std::move(*file));
    return llvm::Error::success();
  };

  for (const Node *n : g.nodes()) {
    if (n->is("Constant") && opts.sharedConstants && n->hasAttr("value") &&
        n->attr("value")->tensor.byteSize() >= SharedConstants::kMinBytes) {
      const Tensor &value = n->attr("value")->tensor;
      auto at = opts.sharedConstants->place(value);
      if (!at)
        return at.takeError();
      setExternal(*graph.add_initializer(), n->output()->name(), value.type(), opts.sharedConstants->location(), *at,
                  value.byteSize());
      continue;
    }
    if (n->is("Weight")) {
      std::string wname = n->stringAttr("name", "");
      onnx::TensorProto &t = *graph.add_initializer();
      const WeightRef *ref = g.weights.find(wname);
      if (opts.weightsByReference && ref && !ref->file.empty()) {
        writeReference(t, n->output()->name(), *ref);
        continue;
      }
      auto value = g.weights.load(wname);
      if (!value)
        return fail(path, llvm::toString(value.takeError()));
      if (!opts.externalDataFile.empty()) {
        if (auto err = openData())
          return err;
        setExternal(t, n->output()->name(), value->type(), opts.externalDataFile, dataOffset, value->byteSize());
        dataOut->os().write(reinterpret_cast<const char *>(value->data()), value->byteSize());
        if (auto err = dataOut->checkWrites())
          return err;
        dataOffset += value->byteSize();
      } else {
        fillTensor(t, n->output()->name(), *value);
      }
      continue;
    }
    onnx::NodeProto &np = *graph.add_node();
    np.set_op_type(n->op());
    np.set_domain(n->domain());
    if (!n->name().empty())
      np.set_name(n->name());
    for (const Value *in : n->inputs())
      np.add_input(in ? in->name() : std::string());
    for (const Value *out : n->outputs())
      np.add_output(out->name());
    for (const auto &[name, attr] : n->attrs())
      if (name != kProgramAttr && name != kStageAttr)
        exportAttribute(*np.add_attribute(), name, attr);
  }
  if (dataOut)
    if (auto err = dataOut->commit())
      return err;
  auto out = OutputFile::create(path);
  if (!out)
    return out.takeError();
  if (auto err = writeMessage(*out, m))
    return err;
  return out->commit();
}

llvm::Expected<uint64_t> SharedConstants::place(const Tensor &t) {
  // The programs of a plan are copies of one graph: their constants share
  // bytes, hashed once (the kept Tensor keeps the bytes, and so their address).
  if (auto it = offsetOfBytes_.find(t.data()); it != offsetOfBytes_.end() && it->second.first.byteSize() == t.byteSize() &&
                                                it->second.first.type().str() == t.type().str())
    return it->second.second;
  llvm::SHA256 h;
  h.update(llvm::ArrayRef<uint8_t>(t.data(), t.byteSize()));
  auto digest = h.final();
  std::string key = t.type().str() + ":" + llvm::toHex(llvm::StringRef(digest.data(), digest.size()));
  if (auto it = offsetOf_.find(key); it != offsetOf_.end()) {
    offsetOfBytes_[t.data()] = {t, it->second};
    return it->second;
  }
  if (!out_) {
    auto file = OutputFile::create(path_);
    if (!file)
      return file.takeError();
    out_.emplace(std::move(*file));
  }
  uint64_t at = size_;
  out_->os().write(reinterpret_cast<const char *>(t.data()), t.byteSize());
  if (auto err = out_->checkWrites())
    return std::move(err);
  size_ += t.byteSize();
  offsetOf_[key] = at;
  offsetOfBytes_[t.data()] = {t, at};
  return at;
}

llvm::Error SharedConstants::commit() { return out_ ? out_->commit() : llvm::Error::success(); }

} // namespace partita
