//===- Npy.cpp ------------------------------------------------------------===//
#include "runtime/io/Npy.h"
#include "compiler/support/OutputFile.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"
#include <cstring>

namespace partita::rt {

namespace {
struct NpyType {
  DType dtype;
  const char *descr;
};
constexpr NpyType kTypes[] = {{DType::F32, "<f4"}, {DType::F64, "<f8"}, {DType::F16, "<f2"},
                              {DType::I64, "<i8"}, {DType::I32, "<i4"}, {DType::I16, "<i2"},
                              {DType::I8, "|i1"},  {DType::U8, "|u1"},  {DType::U16, "<u2"},
                              {DType::Bool, "|b1"}};

llvm::Error fail(llvm::StringRef path, const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), path + ": " + msg);
}
} // namespace

llvm::Expected<Tensor> readNpy(llvm::StringRef path) {
  auto buf = llvm::MemoryBuffer::getFile(path, false, false);
  if (!buf)
    return fail(path, "cannot read file: " + buf.getError().message());
  llvm::StringRef data = (*buf)->getBuffer();
  if (data.size() < 10 || !data.startswith("\x93NUMPY"))
    return fail(path, "not a .npy file");
  unsigned major = static_cast<unsigned char>(data[6]);
  size_t headerLen, start;
  if (major == 1) {
    headerLen = static_cast<unsigned char>(data[8]) | (static_cast<unsigned char>(data[9]) << 8);
    start = 10;
  } else if (major == 2 || major == 3) {
    if (data.size() < 12)
      return fail(path, "truncated .npy header");
    uint32_t len;
    std::memcpy(&len, data.data() + 8, 4);
    headerLen = len;
    start = 12;
  } else {
    return fail(path, "unsupported .npy version " + llvm::Twine(major));
  }
  if (start + headerLen > data.size())
    return fail(path, "truncated .npy header");
  llvm::StringRef header = data.substr(start, headerLen);
  auto field = [&](llvm::StringRef key) -> llvm::StringRef {
    size_t at = header.find(("'" + key + "'").str());
    if (at == llvm::StringRef::npos)
      return "";
    return header.substr(at + key.size() + 2).ltrim(" :");
  };
  llvm::StringRef descr = field("descr");
  if (!descr.consume_front("'"))
    return fail(path, "malformed .npy header (descr)");
  descr = descr.take_until([](char c) { return c == '\''; });
  if (field("fortran_order").startswith("True"))
    return fail(path, "Fortran-ordered arrays are not supported");
  std::optional<DType> dtype;
  for (const auto &t : kTypes)
    if (descr == t.descr || (descr.size() == 3 && descr[0] == '=' && descr.substr(1) == llvm::StringRef(t.descr).substr(1)))
      dtype = t.dtype;
  if (!dtype)
    return fail(path, "unsupported dtype '" + descr + "'");
  llvm::StringRef shapeText = field("shape");
  if (!shapeText.consume_front("("))
    return fail(path, "malformed .npy header (shape)");
  shapeText = shapeText.take_until([](char c) { return c == ')'; });
  Shape shape;
  llvm::SmallVector<llvm::StringRef, 4> parts;
  shapeText.split(parts, ',', -1, false);
  for (auto p : parts) {
    p = p.trim();
    if (p.empty())
      continue;
    int64_t d;
    if (p.getAsInteger(10, d) || d < 0)
      return fail(path, "malformed .npy shape");
    shape.push_back(d);
  }
  int64_t total = dtypeSize(*dtype);
  for (int64_t d : shape)
    if (__builtin_mul_overflow(total, d, &total))
      return fail(path, "shape too large: its byte count overflows a 64-bit size");
  size_t bytes = static_cast<size_t>(total);
  size_t payload = data.size() - start - headerLen;
  if (payload < bytes)
    return fail(path, "truncated: " + llvm::Twine(payload) + " data bytes, expected " + llvm::Twine(bytes));
  const auto *p = reinterpret_cast<const uint8_t *>(data.data() + start + headerLen);
  return Tensor(*dtype, shape, std::make_shared<std::vector<uint8_t>>(p, p + bytes));
}

llvm::Error writeNpy(llvm::StringRef path, DType dtype, llvm::ArrayRef<int64_t> shape, const void *data) {
  const char *descr = nullptr;
  for (const auto &t : kTypes)
    if (t.dtype == dtype)
      descr = t.descr;
  if (!descr)
    return fail(path, "cannot write dtype " + dtypeName(dtype) + " to .npy");
  std::string shapeText = "(";
  for (int64_t d : shape)
    shapeText += std::to_string(d) + ",";
  if (shape.size() > 1)
    shapeText.pop_back();
  shapeText += ")";
  std::string header = "{'descr': '" + std::string(descr) + "', 'fortran_order': False, 'shape': " + shapeText + ", }";
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  return writeFile(path, [&](llvm::raw_ostream &os) {
    os << "\x93NUMPY" << char(1) << char(0) << char(header.size() & 0xff) << char(header.size() >> 8) << header;
    os.write(static_cast<const char *>(data), numElements(shape) * dtypeSize(dtype));
  });
}

llvm::Error writeNpyFiles(llvm::StringRef dir, llvm::ArrayRef<std::string> names, llvm::ArrayRef<Tensor> values) {
  if (auto ec = llvm::sys::fs::create_directories(dir))
    return llvm::createStringError(ec, "cannot create " + dir);
  for (size_t i = 0; i < names.size(); ++i) {
    llvm::SmallString<256> path(dir);
    llvm::sys::path::append(path, names[i] + ".npy");
    if (auto err = writeNpy(path, values[i].dtype(), values[i].shape(), values[i].data()))
      return err;
  }
  return llvm::Error::success();
}

} // namespace partita::rt
