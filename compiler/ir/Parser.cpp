//===- Parser.cpp - recursive-descent parser for the text IR --------------===//
#include "compiler/ir/Parser.h"
#include <cerrno>
#include <cmath>
#include <cstdlib>

namespace partita {

namespace {

class Parser {
public:
  Parser(llvm::StringRef text, llvm::StringRef file) : text_(text), file_(file) {}

  llvm::Expected<std::unique_ptr<Graph>> parse() {
    auto g = std::make_unique<Graph>();
    g_ = g.get();
    if (!parseGraphHeader() || !parseBody())
      return takeError();
    skipSpace();
    if (pos_ != text_.size())
      return fail("unexpected text after the graph"), takeError();
    g->keepOrder(); // the text's
    if (auto err = g->sortTopologically())
      return std::move(err);
    return std::move(g);
  }

private:
  llvm::StringRef text_, file_;
  size_t pos_ = 0;
  Graph *g_ = nullptr;
  std::string error_;

  llvm::Error takeError() {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), error_);
  }

  bool fail(const llvm::Twine &msg) {
    if (!error_.empty())
      return false;
    size_t line = 1, col = 1;
    for (size_t i = 0; i < pos_ && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    error_ = (file_ + ":" + llvm::Twine(line) + ":" + llvm::Twine(col) + ": " + msg).str();
    return false;
  }

  void skipSpace() {
    while (pos_ < text_.size()) {
      char c = text_[pos_];
      if (isspace(static_cast<unsigned char>(c))) {
        ++pos_;
      } else if (text_.substr(pos_).startswith("//")) {
        while (pos_ < text_.size() && text_[pos_] != '\n')
          ++pos_;
      } else {
        break;
      }
    }
  }

  bool peek(llvm::StringRef s) {
    skipSpace();
    return text_.substr(pos_).startswith(s);
  }
  bool consume(llvm::StringRef s) {
    if (!peek(s))
      return false;
    pos_ += s.size();
    return true;
  }
  bool expect(llvm::StringRef s) {
    if (consume(s))
      return true;
    return fail("expected '" + s + "'");
  }

  bool parseIdentifier(std::string &out) {
    skipSpace();
    size_t start = pos_;
    while (pos_ < text_.size() &&
           (isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_' ||
            text_[pos_] == '.'))
      ++pos_;
    if (start == pos_)
      return fail("expected an identifier");
    out = text_.slice(start, pos_).str();
    return true;
  }

  bool parseString(std::string &out) {
    skipSpace();
    if (pos_ >= text_.size() || text_[pos_] != '"')
      return fail("expected a string");
    ++pos_;
    out.clear();
    while (pos_ < text_.size() && text_[pos_] != '"') {
      char c = text_[pos_++];
      if (c == '\\' && pos_ < text_.size()) {
        c = text_[pos_++];
        if (c == 'n')
          c = '\n';
      }
      out += c;
    }
    if (pos_ >= text_.size())
      return fail("unterminated string");
    ++pos_;
    return true;
  }

  bool parseName(std::string &out) { // after '%' or '@'
    if (pos_ < text_.size() && text_[pos_] == '"')
      return parseString(out);
    return parseIdentifier(out);
  }

  bool parseInt(int64_t &out) {
    skipSpace();
    const char *begin = text_.data() + pos_;
    char *end = nullptr;
    long long v = std::strtoll(begin, &end, 10);
    if (end == begin)
      return fail("expected an integer");
    pos_ += static_cast<size_t>(end - begin);
    out = v;
    return true;
  }

  /// Reads a number; sets isFloat when it has a '.', an exponent, or is inf/nan.
  /// An integer is also stored exactly in *intOut (a double rounds past 2^53).
  bool parseNumber(double &out, bool &isFloatOut, int64_t *intOut = nullptr) {
    skipSpace();
    for (llvm::StringRef word : {"-inf", "inf", "nan"})
      if (consume(word)) {
        out = word == "nan" ? NAN : (word == "inf" ? INFINITY : -INFINITY);
        isFloatOut = true;
        return true;
      }
    size_t start = pos_;
    if (pos_ < text_.size() && (text_[pos_] == '-' || text_[pos_] == '+'))
      ++pos_;
    bool sawDigit = false;
    isFloatOut = false;
    while (pos_ < text_.size()) {
      char c = text_[pos_];
      if (isdigit(static_cast<unsigned char>(c))) {
        sawDigit = true;
      } else if (c == '.' || c == 'e' || c == 'E') {
        isFloatOut = true;
      } else if ((c == '-' || c == '+') && (text_[pos_ - 1] == 'e' || text_[pos_ - 1] == 'E')) {
      } else {
        break;
      }
      ++pos_;
    }
    if (!sawDigit) {
      pos_ = start;
      return fail("expected a number");
    }
    std::string s = text_.slice(start, pos_).str();
    if (isFloatOut) {
      out = std::strtod(s.c_str(), nullptr);
      return true;
    }
    errno = 0;
    long long v = std::strtoll(s.c_str(), nullptr, 10);
    if (errno == ERANGE) {
      pos_ = start;
      return fail("integer out of the 64-bit range");
    }
    out = static_cast<double>(v);
    if (intOut)
      *intOut = v;
    return true;
  }

  bool parseType(TensorType &t) {
    std::string dt;
    if (!parseIdentifier(dt))
      return false;
    auto d = parseDType(dt);
    if (!d)
      return fail("unknown element type '" + dt + "'");
    t.dtype = *d;
    if (!expect("["))
      return false;
    t.shape.clear();
    if (consume("*]")) {
      t.known = false;
      return true;
    }
    t.known = true;
    if (consume("]"))
      return true;
    do {
      if (consume("?")) {
        t.shape.push_back(kDynamicDim);
        continue;
      }
      int64_t d;
      if (!parseInt(d))
        return false;
      if (d < 0)
        return fail("negative dimension " + llvm::Twine(d));
      t.shape.push_back(d);
    } while (consume(","));
    int64_t bytes = 16; // the widest element: sizes computed from the shape must not overflow
    for (int64_t dim : t.shape)
      if (dim > 0 && __builtin_mul_overflow(bytes, dim, &bytes))
        return fail("shape too large: its element count overflows a 64-bit size");
    return expect("]");
  }

  bool parseAxisList(llvm::SmallVectorImpl<std::string> &axes, Sharding *withOuter = nullptr, size_t dim = 0) {
    if (!expect("("))
      return false;
    do {
      if (withOuter && consume("outer=")) {
        int64_t o;
        if (!parseInt(o))
          return false;
        if (o < 1)
          return fail("outer factor must be positive");
        withOuter->outer.resize(dim + 1, 1);
        withOuter->outer[dim] = o;
        continue;
      }
      std::string a;
      if (!parseIdentifier(a))
        return false;
      axes.push_back(a);
    } while (consume(","));
    return expect(")");
  }

  bool parseOptionalSharding(Value *v) {
    if (!peek("{"))
      return true;
    consume("{");
    Sharding s;
    if (!consume("}")) {
      do {
        s.dims.emplace_back();
        if (consume("R"))
          continue;
        if (!expect("S") || !parseAxisList(s.dims.back(), &s, s.dims.size() - 1))
          return false;
      } while (consume(","));
      if (!expect("}"))
        return false;
    }
    if (consume("partial_max")) {
      s.partialMax = true;
      if (!parseAxisList(s.partial))
        return false;
    } else if (consume("partial") && !parseAxisList(s.partial)) {
      return false;
    }
    v->sharding() = std::move(s);
    return true;
  }

  bool parseTensorLiteral(Tensor &t) {
    if (!expect("dense<"))
      return false;
    TensorType type;
    if (!parseType(type) || !expect(">") || !expect("["))
      return false;
    std::vector<double> vals;
    std::vector<int64_t> ints;
    if (!consume("]")) {
      do {
        if (isFloat(type.dtype)) {
          double d;
          bool f;
          if (!parseNumber(d, f))
            return false;
          vals.push_back(d);
        } else {
          int64_t i;
          if (!parseInt(i))
            return false;
          ints.push_back(i);
        }
      } while (consume(","));
      if (!expect("]"))
        return false;
    }
    size_t count = isFloat(type.dtype) ? vals.size() : ints.size();
    if (static_cast<int64_t>(count) != type.numel())
      return fail("tensor literal of type " + type.str() + " has " + llvm::Twine(count) +
                  " elements, expected " + llvm::Twine(type.numel()));
    t = isFloat(type.dtype) ? Tensor::fromDoubles(type.dtype, type.shape, vals)
                            : Tensor::fromInts(type.dtype, type.shape, ints);
    return true;
  }

  bool parseAttribute(Attribute &a) {
    if (peek("dense<")) {
      a.kind = Attribute::TensorValue;
      return parseTensorLiteral(a.tensor);
    }
    if (peek("\"")) {
      a.kind = Attribute::String;
      return parseString(a.s);
    }
    if (consume("strings[")) {
      a.kind = Attribute::Strings;
      if (consume("]"))
        return true;
      do {
        std::string s;
        if (!parseString(s))
          return false;
        a.strings.push_back(s);
      } while (consume(","));
      return expect("]");
    }
    bool floats = consume("floats[");
    if (floats || consume("[")) {
      a.kind = floats ? Attribute::Floats : Attribute::Ints;
      if (consume("]"))
        return true;
      do {
        double d;
        bool f;
        int64_t i;
        if (!parseNumber(d, f, &i))
          return false;
        if (floats)
          a.floats.push_back(d);
        else if (f)
          return fail("float in an integer list; write floats[...]");
        else
          a.ints.push_back(i);
      } while (consume(","));
      return expect("]");
    }
    double d;
    bool f;
    int64_t i;
    if (!parseNumber(d, f, &i))
      return false;
    if (f) {
      a.kind = Attribute::Float;
      a.f = d;
    } else {
      a.kind = Attribute::Int;
      a.i = i;
    }
    return true;
  }

  bool parseValueDef(std::string &name) {
    if (!expect("%"))
      return false;
    size_t at = pos_ - 1;
    if (!parseName(name))
      return false;
    if (g_->findValue(name)) {
      pos_ = at;
      return fail("value %" + name + " is defined twice");
    }
    return true;
  }

  bool parseValueUse(Value *&v) {
    if (consume("none")) {
      v = nullptr;
      return true;
    }
    if (!expect("%"))
      return false;
    std::string name;
    size_t at = pos_;
    if (!parseName(name))
      return false;
    v = g_->findValue(name);
    if (!v) {
      pos_ = at - 1;
      return fail("use of undefined value %" + name);
    }
    return true;
  }

  bool parseGraphHeader() {
    if (!expect("graph") || !expect("@") || !parseName(g_->name) || !expect("("))
      return false;
    if (!consume(")")) {
      do {
        std::string name;
        TensorType t;
        if (!parseValueDef(name) || !expect(":") || !parseType(t))
          return false;
        Value *v = g_->addInput(name, t);
        if (!parseOptionalSharding(v))
          return false;
      } while (consume(","));
      if (!expect(")"))
        return false;
    }
    if (!expect("opset") || !parseInt(g_->opset))
      return false;
    if (consume("mesh<")) {
      do {
        MeshAxis axis;
        if (!parseIdentifier(axis.name) || !expect("=") || !parseInt(axis.size))
          return false;
        if (axis.size < 1)
          return fail("mesh axis '" + axis.name + "' must have a positive size");
        if (g_->mesh.find(axis.name))
          return fail("mesh axis '" + axis.name + "' appears twice");
        g_->mesh.axes.push_back(axis);
      } while (consume(","));
      if (!expect(">"))
        return false;
    }
    return expect("{");
  }

  bool parseNode() {
    std::vector<std::string> results;
    do {
      std::string name;
      if (!parseValueDef(name))
        return false;
      for (const auto &r : results)
        if (r == name)
          return fail("value %" + name + " is defined twice");
      results.push_back(name);
    } while (consume(","));
    std::string op;
    if (!expect("=") || !parseIdentifier(op) || !expect("("))
      return false;
    std::vector<Value *> inputs;
    if (!consume(")")) {
      do {
        Value *v;
        if (!parseValueUse(v))
          return false;
        inputs.push_back(v);
      } while (consume(","));
      if (!expect(")"))
        return false;
    }
    std::map<std::string, Attribute> attrs;
    if (consume("{") && !consume("}")) {
      do {
        std::string key;
        Attribute a;
        if (!parseIdentifier(key) || !expect("=") || !parseAttribute(a))
          return false;
        attrs[key] = std::move(a);
      } while (consume(","));
      if (!expect("}"))
        return false;
    }
    llvm::StringRef qualified(op), domain, opName = qualified;
    size_t dot = qualified.rfind('.');
    if (dot != llvm::StringRef::npos) {
      domain = qualified.substr(0, dot);
      opName = qualified.substr(dot + 1);
    }
    Node *n = g_->createNode(opName, inputs, results, domain);
    for (auto &[k, a] : attrs)
      n->setAttr(k, a);
    if (!expect(":"))
      return false;
    for (size_t i = 0; i < results.size(); ++i) {
      if (i && !expect(","))
        return false;
      if (!parseType(n->output(i)->type()) || !parseOptionalSharding(n->output(i)))
        return false;
    }
    if (consume("loc(")) {
      std::string loc;
      if (!parseString(loc) || !expect(")"))
        return false;
      n->setName(loc);
    }
    if (n->is("Weight")) {
      std::string wname = n->stringAttr("name", "");
      if (wname.empty())
        return fail("Weight needs a name attribute");
      WeightRef ref;
      ref.type = n->output()->type();
      g_->weights.add(wname, ref);
    }
    return true;
  }

  bool parseBody() {
    while (!peek("return")) {
      if (pos_ >= text_.size())
        return fail("expected 'return' before the end of the graph");
      if (!parseNode())
        return false;
    }
    expect("return");
    if (!peek("}")) {
      do {
        Value *v;
        if (!parseValueUse(v))
          return false;
        if (!v)
          return fail("a graph output cannot be none");
        g_->outputs().push_back(v);
      } while (consume(","));
    }
    return expect("}");
  }
};

} // namespace

llvm::Expected<std::unique_ptr<Graph>> parseGraph(llvm::StringRef text, llvm::StringRef filename) {
  return Parser(text, filename).parse();
}

} // namespace partita
