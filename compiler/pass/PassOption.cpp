//===- PassOption.cpp - a pass's options, declared once -------------------===//
#include "compiler/pass/PassOption.h"
#include "compiler/pass/PassManager.h"
#include "llvm/ADT/StringExtras.h"
#include <cmath>
#include <cstdio>

namespace partita {

PassOptionBase::PassOptionBase(Pass *owner, std::string name, std::string help)
    : name_(std::move(name)), help_(std::move(help)) {
  owner->options_.push_back(this);
}

std::string formatBound(int64_t v) { return std::to_string(v); }
std::string formatBound(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", v);
  return text;
}

Requirement<std::string> oneOf(std::vector<std::string> values) {
  std::string says = llvm::join(values, ", ");
  return {"one of " + says, [values](const std::string &v) {
            for (const std::string &x : values)
              if (x == v)
                return true;
            return false;
          }};
}

namespace {
/// One reading per type.
bool parseValue(llvm::StringRef text, bool &out) {
  if (text == "1" || text == "true")
    out = true;
  else if (text == "0" || text == "false")
    out = false;
  else
    return false;
  return true;
}
bool parseValue(llvm::StringRef text, int64_t &out) { return !text.trim().getAsInteger(10, out); }
bool parseValue(llvm::StringRef text, double &out) { return !text.trim().getAsDouble(out) && std::isfinite(out); }
bool parseValue(llvm::StringRef text, std::string &out) {
  out = text.str();
  return true;
}
bool parseValue(llvm::StringRef text, std::vector<std::string> &out) {
  llvm::SmallVector<llvm::StringRef> items;
  text.split(items, ',', -1, /*KeepEmpty=*/false);
  out.clear();
  for (llvm::StringRef item : items)
    if (!item.trim().empty())
      out.push_back(item.trim().str());
  return true;
}
bool parseValue(llvm::StringRef text, std::vector<int64_t> &out) {
  llvm::SmallVector<llvm::StringRef> items;
  text.split(items, ',', -1, /*KeepEmpty=*/false);
  out.clear();
  for (llvm::StringRef item : items) {
    int64_t v;
    if (item.trim().getAsInteger(10, v))
      return false;
    out.push_back(v);
  }
  return true;
}

std::string show(bool v) { return v ? "1" : "0"; }
std::string show(int64_t v) { return std::to_string(v); }
std::string show(double v) { return formatBound(v); }
std::string show(const std::string &v) { return v; }
std::string show(const std::vector<std::string> &v) { return llvm::join(v, ","); }
std::string show(const std::vector<int64_t> &v) {
  std::vector<std::string> parts;
  for (int64_t x : v)
    parts.push_back(std::to_string(x));
  return llvm::join(parts, ",");
}

template <typename T> struct TypeText;
template <> struct TypeText<bool> { static constexpr const char *name = "bool", *phrase = "0 or 1 (or false/true)"; };
template <> struct TypeText<int64_t> { static constexpr const char *name = "int", *phrase = "an integer"; };
template <> struct TypeText<double> { static constexpr const char *name = "number", *phrase = "a number"; };
template <> struct TypeText<std::string> { static constexpr const char *name = "string", *phrase = "a string"; };
template <> struct TypeText<std::vector<std::string>> {
  static constexpr const char *name = "list", *phrase = "a comma-separated list";
};
template <> struct TypeText<std::vector<int64_t>> {
  static constexpr const char *name = "int-list", *phrase = "a comma-separated list of integers";
};
} // namespace

template <typename T> llvm::StringRef PassOption<T>::typeName() const { return TypeText<T>::name; }
template <typename T> std::string PassOption<T>::defaultText() const { return show(default_); }
template <typename T> std::string PassOption<T>::expects() const {
  if (require_.says.rfind("one of ", 0) == 0) // a choice says it all
    return require_.says;
  return std::string(TypeText<T>::phrase) + (require_.says.empty() ? "" : " " + require_.says);
}
template <typename T> bool PassOption<T>::parse(llvm::StringRef text) {
  T v{};
  if (!parseValue(text, v) || (require_.holds && !require_.holds(v)))
    return false;
  value_ = std::move(v);
  return true;
}

template class PassOption<bool>;
template class PassOption<int64_t>;
template class PassOption<double>;
template class PassOption<std::string>;
template class PassOption<std::vector<std::string>>;
template class PassOption<std::vector<int64_t>>;

} // namespace partita
