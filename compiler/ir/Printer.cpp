//===- Printer.cpp --------------------------------------------------------===//
#include "compiler/ir/Printer.h"
#include "llvm/Support/Format.h"
#include <cmath>
#include <cstdio>
#include <map>

namespace partita {

namespace {
bool isPlainName(llvm::StringRef s) {
  if (s.empty())
    return false;
  for (char c : s)
    if (!(isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.'))
      return false;
  return true;
}

std::string quote(llvm::StringRef s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\')
      out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

std::string formatDouble(double v, int digits) {
  if (std::isnan(v))
    return "nan";
  if (std::isinf(v))
    return v < 0 ? "-inf" : "inf";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*g", digits, v);
  std::string s = buf;
  if (s.find_first_of(".e") == std::string::npos)
    s += ".0";
  return s;
}

void printTensorData(const Tensor &t, llvm::raw_ostream &os, int64_t elideOver) {
  os << "dense<" << t.type().str() << ">[";
  if (elideOver > 0 && t.numel() > elideOver) {
    os << "...]";
    return;
  }
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (i)
      os << ", ";
    if (t.dtype() == DType::F64)
      os << formatDouble(t.at(i), 17);
    else if (isFloat(t.dtype()))
      os << formatDouble(t.at(i), 9);
    else
      os << t.intAt(i);
  }
  os << "]";
}

void printAttribute(const Attribute &a, llvm::raw_ostream &os, int64_t elideOver) {
  switch (a.kind) {
  case Attribute::Int: os << a.i; break;
  case Attribute::Float: os << formatFloat(a.f); break;
  case Attribute::String: os << quote(a.s); break;
  case Attribute::Ints:
    os << "[";
    for (size_t i = 0; i < a.ints.size(); ++i)
      os << (i ? ", " : "") << a.ints[i];
    os << "]";
    break;
  case Attribute::Floats:
    os << "floats[";
    for (size_t i = 0; i < a.floats.size(); ++i)
      os << (i ? ", " : "") << formatFloat(a.floats[i]);
    os << "]";
    break;
  case Attribute::Strings:
    os << "strings[";
    for (size_t i = 0; i < a.strings.size(); ++i)
      os << (i ? ", " : "") << quote(a.strings[i]);
    os << "]";
    break;
  case Attribute::TensorValue: printTensorData(a.tensor, os, elideOver); break;
  }
}

/// Value and weight names as printed: the graph's own, or generic ones.
class Namer {
public:
  Namer(const Graph &g, bool generic) : generic_(generic) {
    if (!generic)
      return;
    for (const Node *n : g.nodes()) {
      for (const Value *v : n->outputs())
        values_[v] = "%" + std::to_string(values_.size());
      if (n->is("Weight"))
        weights_[n] = "w" + std::to_string(weights_.size());
    }
  }
  std::string value(const Value *v) const {
    auto it = values_.find(v);
    return it == values_.end() ? printValueRef(v) : it->second;
  }
  /// The weight name to print for a Weight node, or "" to print as stored.
  std::string weight(const Node *n) const {
    auto it = weights_.find(n);
    return it == weights_.end() ? std::string() : it->second;
  }
  bool generic() const { return generic_; }

private:
  bool generic_;
  std::map<const Value *, std::string> values_;
  std::map<const Node *, std::string> weights_;
};

void printTypeAndSharding(const Value *v, llvm::raw_ostream &os) {
  os << v->type().str();
  if (v->sharding())
    os << " " << v->sharding()->str();
}
} // namespace

std::string formatFloat(double v) { return formatDouble(v, 9); }

std::string printValueRef(const Value *v) {
  if (!v)
    return "none";
  return "%" + (isPlainName(v->name()) ? v->name() : quote(v->name()));
}

void printGraph(const Graph &g, llvm::raw_ostream &os, const PrintOptions &opts) {
  Namer names(g, opts.genericNames);
  os << "graph @" << (isPlainName(g.name) ? g.name : quote(g.name)) << "(";
  for (size_t i = 0; i < g.inputs().size(); ++i) {
    os << (i ? ", " : "") << printValueRef(g.inputs()[i]) << ": ";
    printTypeAndSharding(g.inputs()[i], os);
  }
  os << ") opset " << g.opset;
  if (!g.mesh.empty())
    os << " " << g.mesh.str();
  os << " {\n";
  for (const Node *n : g.nodes()) {
    os << "  ";
    for (size_t i = 0; i < n->numOutputs(); ++i)
      os << (i ? ", " : "") << names.value(n->output(i));
    os << " = " << n->qualifiedOp() << "(";
    for (size_t i = 0; i < n->numInputs(); ++i)
      os << (i ? ", " : "") << names.value(n->input(i));
    os << ")";
    if (!n->attrs().empty()) {
      os << " {";
      bool first = true;
      for (const auto &[name, a] : n->attrs()) {
        os << (first ? "" : ", ") << name << " = ";
        std::string generic = names.weight(n);
        if (name == "name" && !generic.empty())
          os << quote(generic);
        else
          printAttribute(a, os, opts.elideTensorsOver);
        first = false;
      }
      os << "}";
    }
    os << " : ";
    for (size_t i = 0; i < n->numOutputs(); ++i) {
      os << (i ? ", " : "");
      printTypeAndSharding(n->output(i), os);
    }
    if (!n->name().empty() && !names.generic())
      os << " loc(" << quote(n->name()) << ")";
    os << "\n";
  }
  os << "  return";
  for (size_t i = 0; i < g.outputs().size(); ++i)
    os << (i ? ", " : " ") << names.value(g.outputs()[i]);
  os << "\n}\n";
}

} // namespace partita
