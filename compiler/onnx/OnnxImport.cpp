//===- OnnxImport.cpp -----------------------------------------------------===//
#include "compiler/onnx/OnnxImport.h"
#include "llvm/ADT/StringSet.h"
#include "compiler/ops/ConstantEvaluator.h"
#include "compiler/ops/OpRegistry.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "onnx/defs/parser.h"
#include "onnx/onnx_pb.h"
#include <algorithm>
#include <google/protobuf/io/coded_stream.h>

namespace partita {

namespace {

constexpr int64_t kMinOpset = 13, kMaxOpset = 17;
constexpr const char *kSupportedTypes =
    "which Partita does not support (it reads float, float16, bfloat16, double, int64, int32, int16, int8, "
    "uint8, uint16 and bool)";

/// Bytes of a TensorProto's inline data (raw_data or typed fields).
llvm::Expected<std::shared_ptr<const std::vector<uint8_t>>> inlineBytes(const onnx::TensorProto &t,
                                                                    DType dtype, int64_t numel) {
  size_t expected = static_cast<size_t>(numel) * dtypeSize(dtype);
  auto bytes = std::make_shared<std::vector<uint8_t>>();
  if (t.has_raw_data()) {
    bytes->assign(t.raw_data().begin(), t.raw_data().end());
  } else {
    Tensor tmp;
    if (t.float_data_size())
      tmp = Tensor::fromDoubles(dtype, {}, std::vector<double>(t.float_data().begin(), t.float_data().end()));
    else if (t.double_data_size())
      tmp = Tensor::fromDoubles(dtype, {}, std::vector<double>(t.double_data().begin(), t.double_data().end()));
    else if (t.int64_data_size())
      tmp = Tensor::fromInts(dtype, {}, std::vector<int64_t>(t.int64_data().begin(), t.int64_data().end()));
    else if (t.int32_data_size() && (dtype == DType::F16 || dtype == DType::BF16)) {
      // 16-bit floats are stored as their bit patterns in int32_data.
      for (int32_t bitsVal : t.int32_data()) {
        bytes->push_back(static_cast<uint8_t>(bitsVal & 0xff));
        bytes->push_back(static_cast<uint8_t>((bitsVal >> 8) & 0xff));
      }
    } else if (t.int32_data_size())
      tmp = Tensor::fromInts(dtype, {}, std::vector<int64_t>(t.int32_data().begin(), t.int32_data().end()));
    if (tmp.data())
      bytes->assign(tmp.data(), tmp.data() + tmp.byteSize());
  }
  if (bytes->size() != expected)
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "tensor '" + t.name() + "' holds " + llvm::Twine(bytes->size()) +
                " bytes, its type needs " + llvm::Twine(expected));
  return std::shared_ptr<const std::vector<uint8_t>>(std::move(bytes));
}

/// "[2,-3]": sizes as written, negative ones included (shapeString would show -1 as '?').
template <typename Range> std::string dimsString(const Range &dims) {
  std::string s;
  for (int64_t d : dims)
    s += (s.empty() ? "" : ",") + std::to_string(d);
  return "[" + s + "]";
}

/// "has negative dimension -2 (dimension 0 of [-2,3])" for dims with a negative size.
template <typename Range> std::optional<std::string> badDim(const Range &dims) {
  int i = 0;
  for (int64_t d : dims) {
    if (d < 0)
      return "has negative dimension " + std::to_string(d) + " (dimension " + std::to_string(i) + " of " +
             dimsString(dims) + ")";
    ++i;
  }
  // A model may declare any dims; 2^40 x 2^40 elements would overflow the sizes computed from them.
  int64_t bytes = 16; // the widest element
  for (int64_t d : dims)
    if (__builtin_mul_overflow(bytes, d, &bytes))
      return "is too large (" + dimsString(dims) + " elements overflow a 64-bit size)";
  return std::nullopt;
}

class Importer {
public:
  Importer(llvm::StringRef path, const ImportOptions &opts) : path_(path.str()), opts_(opts) {}

  llvm::Expected<std::unique_ptr<Graph>> run() {
    onnx::ModelProto model;
    if (auto err = readModel(model))
      return std::move(err);
    g_ = std::make_unique<Graph>();
    if (auto err = importModel(model))
      return std::move(err);
    return std::move(g_);
  }

private:
  std::string path_;
  const ImportOptions &opts_;
  std::unique_ptr<Graph> g_;
  llvm::StringMap<Value *> scope_;
  llvm::StringMap<int64_t> domainOpsets_; // opset_import of domains other than ai.onnx

  llvm::Error fail(const llvm::Twine &msg) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), path_ + ": " + msg);
  }
  llvm::Error failAt(const onnx::NodeProto &n, const llvm::Twine &msg) {
    std::string who = n.name().empty() ? (n.output_size() ? n.output(0) : std::string("?")) : n.name();
    if (isDefaultDomain(n.domain()))
      return fail("node '" + who + "' (" + n.op_type() + ", opset " + llvm::Twine(g_->opset) + "): " + msg);
    auto imported = domainOpsets_.find(n.domain());
    std::string opset = imported == domainOpsets_.end()
                            ? "domain '" + n.domain() + "' not imported"
                            : "domain '" + n.domain() + "' opset " + std::to_string(imported->second);
    return fail("node '" + who + "' (" + n.domain() + "." + n.op_type() + ", " + opset + "): " + msg);
  }
  static bool isDefaultDomain(llvm::StringRef domain) { return domain.empty() || domain == "ai.onnx"; }

  llvm::Error readModel(onnx::ModelProto &model) {
    // A protobuf cannot exceed 2 GB: a model this large holds its weights
    // inline, which ONNX cannot read back either; say so before reading it.
    uint64_t fileSize = 0;
    if (!llvm::sys::fs::file_size(path_, fileSize) && fileSize > static_cast<uint64_t>(INT32_MAX))
      return fail("the model file is " + llvm::Twine(fileSize) + " bytes (" +
                  llvm::formatv("{0:F2}", fileSize / double(1ULL << 30)).str() +
                  " GiB), over protobuf's 2 GB limit, so it cannot be read as one ONNX protobuf. Save the "
                  "weights as ONNX external data beside the model, e.g. in Python: "
                  "onnx.save_model(m, path, save_as_external_data=True) (torch.onnx.export does this by itself "
                  "for models over 2 GB)");
    auto buf = llvm::MemoryBuffer::getFile(path_, /*IsText=*/false, /*RequiresNullTerminator=*/true);
    if (!buf)
      return fail("cannot read file: " + buf.getError().message());
    llvm::StringRef data = (*buf)->getBuffer();
    if (data.ltrim().startswith("<")) {
      // ONNX's parser reports most errors in its status but lets std::stoi & co.
      // throw on malformed numbers.
      try {
        onnx::OnnxParser parser(data.data());
        auto status = parser.Parse(model);
        if (!status.IsOK())
          return fail("ONNX text syntax error: " + status.ErrorMessage());
      } catch (const std::exception &e) {
        return fail(llvm::Twine("ONNX text syntax error: ") + e.what());
      }
      return llvm::Error::success();
    }
    google::protobuf::io::CodedInputStream in(reinterpret_cast<const uint8_t *>(data.data()),
                                              static_cast<int>(data.size()));
    in.SetTotalBytesLimit(INT32_MAX);
    if (!model.ParseFromCodedStream(&in) || !in.ConsumedEntireMessage())
      return fail("not a valid ONNX model (malformed or truncated protobuf)");
    if (!model.has_graph())
      return fail("not a valid ONNX model (no graph)");
    return llvm::Error::success();
  }

  llvm::Error importModel(const onnx::ModelProto &model) {
    int64_t opset = -1;
    for (const auto &imp : model.opset_import())
      if (isDefaultDomain(imp.domain()))
        opset = imp.version();
      else
        domainOpsets_[imp.domain()] = imp.version();
    if (opset < 0)
      return fail("model imports no ai.onnx opset");
    if (opset < kMinOpset || opset > kMaxOpset)
      return fail("opset " + llvm::Twine(opset) + " is not supported (Partita reads opsets " +
                  llvm::Twine(kMinOpset) + "-" + llvm::Twine(kMaxOpset) + ")");
    g_->opset = opset;
    const onnx::GraphProto &graph = model.graph();
    g_->name = graph.name().empty() ? "main" : graph.name();

    llvm::StringMap<const onnx::TensorProto *> inits;
    for (const auto &t : graph.initializer())
      inits[t.name()] = &t;
    if (auto err = checkNamedInputs(graph, inits))
      return err;
    for (const auto &in : graph.input())
      if (!inits.count(in.name()))
        if (auto err = importInput(in))
          return err;
    for (const auto &t : graph.initializer())
      if (auto err = importInitializer(t))
        return err;
    for (const auto &n : graph.node())
      if (auto err = importNode(n))
        return err;
    for (const auto &out : graph.output()) {
      Value *v = scope_.lookup(out.name());
      if (!v)
        return fail("graph output '" + out.name() + "' is not produced by any node");
      g_->outputs().push_back(v);
    }
    g_->keepOrder(); // the file's
    if (auto err = g_->sortTopologically())
      return fail(llvm::toString(std::move(err)));
    if (auto err = inferGraph(*g_))
      return fail(llvm::toString(std::move(err)));
    return llvm::Error::success();
  }

  /// Every input a shape option names must exist (a misspelt name would
  /// otherwise be ignored and the input keep its declared shape).
  llvm::Error checkNamedInputs(const onnx::GraphProto &graph,
                               const llvm::StringMap<const onnx::TensorProto *> &inits) {
    std::string names;
    llvm::StringSet<> known;
    for (const auto &in : graph.input())
      if (!inits.count(in.name())) {
        known.insert(in.name());
        names += (names.empty() ? "" : ", ") + in.name();
      }
    for (const auto &entry : opts_.inputShapes)
      if (!known.count(entry.getKey()))
        return fail(opts_.shapeFlag + " " + entry.getKey() + ": the model has no such input (its inputs: " + (names.empty() ? std::string("none") : names) + ")");
    return llvm::Error::success();
  }

  llvm::Error importInput(const onnx::ValueInfoProto &in) {
    auto fixedValue = opts_.inputValues.find(in.name());
    if (fixedValue != opts_.inputValues.end()) {
      scope_[in.name()] = g_->createConstant(fixedValue->second, in.name());
      return llvm::Error::success();
    }
    if (!in.type().has_tensor_type())
      return fail("input '" + in.name() + "' is not a tensor");
    const auto &tt = in.type().tensor_type();
    auto dtype = dtypeFromOnnx(tt.elem_type());
    if (!dtype)
      return fail("input '" + in.name() + "' has element type " + onnxDTypeName(tt.elem_type()) + ", " +
                  kSupportedTypes);
    TensorType type{*dtype, {}, true};
    auto fixed = opts_.inputShapes.find(in.name());
    if (fixed != opts_.inputShapes.end()) {
      type.shape = fixed->second;
      if (tt.has_shape() && tt.shape().dim_size() != static_cast<int>(type.shape.size()))
        return fail(opts_.shapeFlag + " " + in.name() + " gives rank " + llvm::Twine(type.shape.size()) +
                    " but the model declares rank " + llvm::Twine(tt.shape().dim_size()));
      for (int i = 0; tt.has_shape() && i < tt.shape().dim_size(); ++i)
        if (tt.shape().dim(i).has_dim_value() && tt.shape().dim(i).dim_value() != type.shape[i])
          return fail(opts_.shapeFlag + " " + in.name() + " sets dimension " + llvm::Twine(i) + " to " +
                      llvm::Twine(type.shape[i]) + " but the model fixes it to " +
                      llvm::Twine(tt.shape().dim(i).dim_value()));
    } else {
      if (!tt.has_shape())
        return fail("input '" + in.name() + "' has no shape; give it with " + opts_.shapeFlag + " " + in.name());
      auto hint = opts_.dynamicDimHints.find(in.name());
      const Shape *hinted = hint != opts_.dynamicDimHints.end() &&
                                    hint->second.size() == static_cast<size_t>(tt.shape().dim_size())
                                ? &hint->second
                                : nullptr;
      for (int i = 0; i < tt.shape().dim_size(); ++i) {
        const auto &d = tt.shape().dim(i);
        if (d.has_dim_value() && d.dim_value() <= 0) {
          std::string dims;
          for (const auto &e : tt.shape().dim())
            dims += (dims.empty() ? "" : ",") +
                    (e.has_dim_value() ? std::to_string(e.dim_value())
                                       : (e.dim_param().empty() ? std::string("?") : e.dim_param()));
          return fail("input '" + in.name() + "' has " +
                      (d.dim_value() < 0 ? "negative dimension " + std::to_string(d.dim_value())
                                         : std::string("a dimension of size 0")) +
                      " (dimension " + llvm::Twine(i) + " of [" + dims + "]); Partita needs positive sizes");
        }
        if (!d.has_dim_value() && hinted) {
          type.shape.push_back((*hinted)[i]);
          continue;
        }
        if (!d.has_dim_value())
          return fail("input '" + in.name() + "' has dynamic dimension '" +
                      (d.dim_param().empty() ? std::string("?") : d.dim_param()) +
                      "'; fix it with " + opts_.shapeFlag + " " + in.name() +
                      (opts_.shapeFlag == "--input-shape" ? "=DxD..." : "=FILE.npy"));
        type.shape.push_back(d.dim_value());
      }
      if (auto bad = badDim(type.shape))
        return fail("input '" + in.name() + "' " + *bad);
    }
    scope_[in.name()] = g_->addInput(in.name(), type);
    return llvm::Error::success();
  }

  /// A slice key's comma-separated integers.
  static bool parseInts(llvm::StringRef s, Shape &out) {
    llvm::SmallVector<llvm::StringRef, 4> parts;
    s.split(parts, ',', -1, /*KeepEmpty=*/false);
    for (llvm::StringRef p : parts) {
      int64_t v = 0;
      if (p.trim().getAsInteger(10, v) || v < 0)
        return false;
      out.push_back(v);
    }
    return true;
  }

  /// Partita's slice keys on a by-reference weight: the stored tensor's
  /// shape, the box and the permutation (logical = transpose(stored, perm)).
  llvm::Error readSlice(const onnx::TensorProto &t, const TensorType &declared, WeightRef &ref, size_t &expected) {
    Shape stored, start, perm;
    for (const auto &kv : t.external_data()) // a half parameter's float32 bytes (WeightRef::loadAs)
      if (kv.key() == "partita_stored_type") {
        int64_t code = 0;
        if (llvm::StringRef(kv.value()).getAsInteger(10, code) || dtypeFromOnnx(static_cast<int>(code)) != DType::F32 ||
            !isHalfFloat(declared.dtype))
          return fail("initializer '" + t.name() + "' has external data partita_stored_type '" + kv.value() +
                      "': a bf16 or fp16 initializer may be stored as float32 (1), nothing else");
        ref.loadAs = declared.dtype;
        expected = static_cast<size_t>(declared.numel()) * dtypeSize(DType::F32);
      }
    size_t elem = dtypeSize(ref.loadAs ? DType::F32 : declared.dtype);
    // A flat part (ZeRO): "dim,blocks,length,start" of the weight of shape
    // partita_flat_shape, which the other keys describe (WeightRef::flat).
    Shape flat, flatShape;
    std::string byAxis;
    int64_t stride = 0;
    for (const auto &kv : t.external_data()) {
      llvm::StringRef key(kv.key());
      if (key == "partita_flat_block") { // "axis,stride": placed by the rank's coordinate on axis
        auto [axis, n] = llvm::StringRef(kv.value()).split(',');
        if (axis.empty() || n.getAsInteger(10, stride) || stride < 0)
          return fail("initializer '" + t.name() + "' has external data partita_flat_block '" + kv.value() +
                      "', not axis,stride");
        byAxis = axis.str();
        continue;
      }
      Shape *dst = key == "partita_stored_shape" ? &stored : key == "partita_view_start" ? &start
                   : key == "partita_perm"       ? &perm
                   : key == "partita_flat"       ? &flat
                   : key == "partita_flat_shape" ? &flatShape
                                                 : nullptr;
      if (dst && !parseInts(kv.value(), *dst))
        return fail("initializer '" + t.name() + "' has external data " + kv.key() + " '" + kv.value() +
                    "', not a list of integers");
    }
    if (stored.empty())
      return llvm::Error::success();
    Shape logical = stored;
    if (!perm.empty()) {
      std::vector<bool> seen(stored.size());
      bool ok = perm.size() == stored.size();
      for (size_t d = 0; ok && d < perm.size(); ++d) {
        ok = perm[d] < static_cast<int64_t>(stored.size()) && !seen[perm[d]];
        if (ok) {
          seen[perm[d]] = true;
          logical[d] = stored[perm[d]];
        }
      }
      if (!ok)
        return fail("initializer '" + t.name() + "': partita_perm is no permutation of its stored dims");
    }
    if (!flat.empty() && (flat.size() != 4 || declared.shape.size() != 1 || flat[1] < 1))
      return fail("initializer '" + t.name() + "': partita_flat is not dim,blocks,length,start of a 1-D part");
    const Shape &box = flat.empty() ? declared.shape : flatShape; // the weight the slice keys describe
    bool fits = box.size() == logical.size() && (start.empty() || start.size() == logical.size());
    for (size_t d = 0; fits && d < logical.size(); ++d)
      fits = (start.empty() ? 0 : start[d]) + box[d] <= logical[d];
    if (!fits)
      return fail("initializer '" + t.name() + "': its slice does not fit the stored tensor");
    if (!byAxis.empty() && flat.empty())
      return fail("initializer '" + t.name() + "': partita_flat_block without partita_flat");
    if (!flat.empty()) {
      auto at = opts_.coordinates.find(byAxis);
      int64_t coord = byAxis.empty() || at == opts_.coordinates.end() ? 0 : at->second;
      ref.flat = FlatPart{flat[0], flat[1], flat[2], flat[3] + coord * stride, flatShape};
      // The part must lie in the flat buffer (its blocks padded to length).
      if (ref.flat->start < 0 || ref.flat->start + declared.numel() > flat[1] * flat[2])
        return fail("initializer '" + t.name() + "': its part at coordinate " + llvm::Twine(coord) + " of " + byAxis +
                    " lies outside its flat buffer");
    }
    ref.storedShape = stored;
    ref.viewStart = start;
    ref.perm.assign(perm.begin(), perm.end());
    expected = static_cast<size_t>(numElements(stored)) * elem;
    return llvm::Error::success();
  }

  llvm::Expected<WeightRef> externalRef(const onnx::TensorProto &t, size_t expected, const TensorType &declared) {
    WeightRef ref;
    std::string location;
    for (const auto &kv : t.external_data()) {
      if (kv.key() == "location")
        location = kv.value();
      else if ((kv.key() == "offset" || kv.key() == "length") &&
               llvm::StringRef(kv.value()).getAsInteger(10, kv.key() == "offset" ? ref.offset : ref.length))
        return fail("initializer '" + t.name() + "' has external data " + kv.key() + " '" + kv.value() +
                    "', not a byte count");
    }
    if (location.empty())
      return fail("initializer '" + t.name() + "' has external data without a location");
    llvm::SmallString<256> file(llvm::sys::path::parent_path(path_));
    if (opts_.trustedLocations) {
      if (auto err = readSlice(t, declared, ref, expected))
        return err;
      if (llvm::sys::path::is_absolute(location)) {
        if (std::find(opts_.trustedFiles.begin(), opts_.trustedFiles.end(), location) == opts_.trustedFiles.end())
          return fail("initializer '" + t.name() + "' refers to " + location +
                      ", which is not one of the plan's weight files (plan.json weight_files)");
        file = location;
      } else
        llvm::sys::path::append(file, location);
    } else if (llvm::sys::path::is_absolute(location) || llvm::StringRef(location).contains("..")) {
      return fail("initializer '" + t.name() + "' has external data outside the model folder: " + location +
                  (llvm::sys::path::is_absolute(location)
                       ? " (a rank program compiled by reference to the original weights: run it with partita "
                         "launch, or compile with --materialize-weights)"
                       : ""));
    } else {
      llvm::sys::path::append(file, location);
    }
    if (!ref.length)
      ref.length = expected;
    if (ref.length != expected)
      return fail("initializer '" + t.name() + "' external length " + llvm::Twine(ref.length) +
                  " differs from its type's " + llvm::Twine(expected) + " bytes");
    uint64_t size = 0;
    if (llvm::sys::fs::file_size(file, size))
      return fail("initializer '" + t.name() + "': missing external data file '" + file + "'");
    if (ref.offset > size || ref.length > size - ref.offset)
      return fail("initializer '" + t.name() + "': external data file '" + file + "' is truncated (" +
                  llvm::Twine(size) + " bytes, needs " + llvm::Twine(ref.offset + ref.length) + ")");
    ref.file = file.str().str();
    return ref;
  }

  llvm::Error importInitializer(const onnx::TensorProto &t) {
    auto dtype = dtypeFromOnnx(t.data_type());
    if (!dtype)
      return fail("initializer '" + t.name() + "' has element type " + onnxDTypeName(t.data_type()) + ", " +
                  kSupportedTypes);
    if (auto bad = badDim(t.dims()))
      return fail("initializer '" + t.name() + "' " + *bad);
    Shape shape(t.dims().begin(), t.dims().end());
    TensorType type{*dtype, shape, true};
    bool external = t.data_location() == onnx::TensorProto::EXTERNAL;
    size_t expected = static_cast<size_t>(type.numel()) * dtypeSize(*dtype);
    // Small integer tensors and scalars are constants (shape operands, scales);
    // everything else is a weight, held by reference.
    bool isConstant = !external && (shape.empty() || (!isFloat(*dtype) && type.numel() <= 1024));
    if (isConstant) {
      auto bytes = inlineBytes(t, *dtype, type.numel());
      if (!bytes)
        return bytes.takeError();
      scope_[t.name()] = g_->createConstant(Tensor(*dtype, shape, *bytes), t.name());
      return llvm::Error::success();
    }
    WeightRef ref;
    if (external) {
      auto ext = externalRef(t, expected, type);
      if (!ext)
        return ext.takeError();
      ref = *ext;
    } else {
      auto bytes = inlineBytes(t, *dtype, type.numel());
      if (!bytes)
        return bytes.takeError();
      ref.inlineBytes = *bytes;
      ref.length = expected;
    }
    ref.type = type;
    if (ref.loadAs) // held as declared, stored as float32
      ref.type.dtype = DType::F32;
    ref.source = t.name();
    g_->weights.add(t.name(), ref);
    Node *n = g_->createNode("Weight", {}, {t.name()});
    n->setAttr("name", Attribute::ofString(t.name()));
    n->output()->type() = type;
    scope_[t.name()] = n->output();
    return llvm::Error::success();
  }

  llvm::Expected<Attribute> importAttribute(const onnx::NodeProto &n, const onnx::AttributeProto &a) {
    switch (a.type()) {
    case onnx::AttributeProto::INT: return Attribute::ofInt(a.i());
    case onnx::AttributeProto::FLOAT: return Attribute::ofFloat(a.f());
    case onnx::AttributeProto::STRING: return Attribute::ofString(a.s());
    case onnx::AttributeProto::INTS: return Attribute::ofInts({a.ints().begin(), a.ints().end()});
    case onnx::AttributeProto::FLOATS: return Attribute::ofFloats({a.floats().begin(), a.floats().end()});
    case onnx::AttributeProto::STRINGS: {
      Attribute r;
      r.kind = Attribute::Strings;
      r.strings.assign(a.strings().begin(), a.strings().end());
      return r;
    }
    case onnx::AttributeProto::TENSOR: {
      const auto &t = a.t();
      auto dtype = dtypeFromOnnx(t.data_type());
      if (!dtype)
        return failAt(n, "attribute '" + a.name() + "' has element type " + onnxDTypeName(t.data_type()) + ", " +
                            kSupportedTypes);
      if (t.data_location() == onnx::TensorProto::EXTERNAL)
        return failAt(n, "attribute '" + a.name() + "' uses external data, which is not supported");
      if (auto bad = badDim(t.dims()))
        return failAt(n, "attribute '" + a.name() + "' " + *bad);
      Shape shape(t.dims().begin(), t.dims().end());
      auto bytes = inlineBytes(t, *dtype, numElements(shape));
      if (!bytes)
        return bytes.takeError();
      return Attribute::ofTensor(Tensor(*dtype, shape, *bytes));
    }
    default:
      return failAt(n, "attribute '" + a.name() + "' has a kind Partita does not support (graph/sparse)");
    }
  }

  llvm::Error importNode(const onnx::NodeProto &np) {
    std::string domain = np.domain() == "ai.onnx" ? "" : np.domain();
    std::string qualified = domain.empty() ? np.op_type() : domain + "." + np.op_type();
    if (!domain.empty() && domain != "partita")
      return failAt(np, "domain '" + domain + "' is " +
                            (domainOpsets_.count(domain) ? "" : "not imported by the model and ") +
                            "not supported by Partita (it reads operators of the ai.onnx domain, opsets " +
                            llvm::Twine(kMinOpset) + "-" + llvm::Twine(kMaxOpset) + ")");
    if (!OpRegistry::get().find(qualified) || np.op_type() == "Weight")
      return failAt(np, "operator is not supported by Partita");
    std::vector<Value *> inputs;
    for (const auto &name : np.input()) {
      if (name.empty()) {
        inputs.push_back(nullptr);
        continue;
      }
      Value *v = scope_.lookup(name);
      if (!v)
        return failAt(np, "input '" + name + "' is not defined by any earlier node, input or initializer");
      inputs.push_back(v);
    }
    // Trailing omitted optional inputs carry no meaning.
    while (!inputs.empty() && !inputs.back())
      inputs.pop_back();
    std::vector<std::string> outs;
    for (const auto &o : np.output())
      outs.push_back(o.empty() ? "unused" : o);
    Node *n = g_->createNode(np.op_type(), inputs, outs, domain, np.name());
    for (const auto &a : np.attribute()) {
      if (a.name() == kProgramAttr || a.name() == kStageAttr)
        return failAt(np, "attribute '" + a.name() + "' is a name Partita keeps for its own IR (the program or "
                          "pipeline stage a node runs in)");
      auto attr = importAttribute(np, a);
      if (!attr)
        return attr.takeError();
      n->setAttr(a.name(), *attr);
    }
    if (n->is("Constant") && (!n->hasAttr("value") || n->attrs().size() != 1)) {
      if (auto err = normalizeConstant(np, *n))
        return err;
    }
    for (size_t i = 0; i < outs.size(); ++i) {
      if (n->output(i)->name() != outs[i] && !np.output(i).empty())
        return failAt(np, "output '" + outs[i] + "' is defined twice");
      if (!np.output(i).empty())
        scope_[outs[i]] = n->output(i);
    }
    return llvm::Error::success();
  }

  /// Constant's value_float/value_int/value_ints/value_floats → value tensor.
  llvm::Error normalizeConstant(const onnx::NodeProto &np, Node &n) {
    Tensor t;
    if (const Attribute *a = n.attr("value_float"))
      t = Tensor::fromDoubles(DType::F32, {}, {a->f});
    else if (const Attribute *a = n.attr("value_int"))
      t = Tensor::fromInts(DType::I64, {}, {a->i});
    else if (const Attribute *a = n.attr("value_floats"))
      t = Tensor::fromDoubles(DType::F32, {static_cast<int64_t>(a->floats.size())}, a->floats);
    else if (const Attribute *a = n.attr("value_ints"))
      t = Tensor::fromInts(DType::I64, {static_cast<int64_t>(a->ints.size())}, a->ints);
    else
      return failAt(np, "Constant without a supported value attribute");
    for (const char *k : {"value_float", "value_int", "value_floats", "value_ints"})
      n.removeAttr(k);
    n.setAttr("value", Attribute::ofTensor(t));
    return llvm::Error::success();
  }
};

} // namespace

llvm::Expected<std::unique_ptr<Graph>> importOnnx(llvm::StringRef path, const ImportOptions &opts) {
  return Importer(path, opts).run();
}

llvm::Expected<Tensor> tensorFromOnnx(const onnx::TensorProto &t) {
  auto dtype = dtypeFromOnnx(t.data_type());
  if (!dtype)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "tensor '" + t.name() + "' has element type " + onnxDTypeName(t.data_type()) + ", " +
                                       kSupportedTypes);
  if (t.data_location() == onnx::TensorProto::EXTERNAL)
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "tensor '" + t.name() + "' uses external data");
  if (auto bad = badDim(t.dims()))
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "tensor '" + t.name() + "' " + *bad);
  Shape shape(t.dims().begin(), t.dims().end());
  auto bytes = inlineBytes(t, *dtype, numElements(shape));
  if (!bytes)
    return bytes.takeError();
  return Tensor(*dtype, shape, *bytes);
}

llvm::Error parseInputShape(llvm::StringRef spec, ImportOptions &opts) {
  auto [name, dims] = spec.split('=');
  auto fail = [&]() {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "--input-shape '" + spec + "': expected NAME=D1xD2x... with positive sizes");
  };
  if (name.empty() || dims.empty())
    return fail();
  Shape shape;
  llvm::SmallVector<llvm::StringRef, 4> parts;
  dims.split(parts, 'x');
  for (auto p : parts) {
    int64_t d;
    if (p.getAsInteger(10, d))
      return fail();
    if (d <= 0)
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "--input-shape '" + spec + "': dimension " + llvm::Twine(shape.size()) +
                                         " of '" + name + "' is " + (d < 0 ? "negative" : "zero") + " (" +
                                         llvm::Twine(d) + "); sizes must be positive");
    shape.push_back(d);
  }
  opts.inputShapes[name] = shape;
  return llvm::Error::success();
}

} // namespace partita
