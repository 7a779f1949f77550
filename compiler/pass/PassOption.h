//===- PassOption.h - a pass's options, declared once -----------*- C++ -*-===//
//
// A pass declares each option as a member (MLIR's Option<> in Passes.td is the
// model): its name, default, help and, where the type allows values the pass
// cannot take, the requirement they must meet.
//
//   PassOption<int64_t> tp_{this, "tp", 1, "tensor-parallel size", atLeast<int64_t>(1)};
//
// Pass::setOption parses `name{key=value,...}` through the declarations (one
// reading per type: a bool is 1/0/true/false and nothing else), and
// `partita-opt --list-passes` prints them, so the documentation cannot drift
// from what the pass accepts.
//===----------------------------------------------------------------------===//
#pragma once
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace partita {

class Pass;

class PassOptionBase {
public:
  PassOptionBase(Pass *owner, std::string name, std::string help);
  virtual ~PassOptionBase() = default;
  PassOptionBase(const PassOptionBase &) = delete;
  PassOptionBase &operator=(const PassOptionBase &) = delete;

  const std::string &name() const { return name_; }
  const std::string &help() const { return help_; }
  /// "int", "bool", "number", "string", "list", "int-list".
  virtual llvm::StringRef typeName() const = 0;
  /// The default as a user would type it ("" for an empty list).
  virtual std::string defaultText() const = 0;
  /// What a value must be ("an integer >= 1"), for the error of a bad one.
  virtual std::string expects() const = 0;
  /// Parses and checks `value`; false when it is not one the option takes.
  virtual bool parse(llvm::StringRef value) = 0;

private:
  std::string name_, help_;
};

/// A requirement on a parsed value: what it says ("an integer >= 1") and the test.
template <typename T> struct Requirement {
  std::string says;
  std::function<bool(const T &)> holds;
};
std::string formatBound(int64_t v);
std::string formatBound(double v);
template <typename T> Requirement<T> atLeast(T low) {
  return {">= " + formatBound(low), [low](const T &v) { return v >= low; }};
}
template <typename T> Requirement<T> between(T low, T high) {
  return {"in [" + formatBound(low) + ", " + formatBound(high) + "]",
          [low, high](const T &v) { return v >= low && v <= high; }};
}
/// A string among `values` (the error lists them).
Requirement<std::string> oneOf(std::vector<std::string> values);
/// Every element of a list meets `each`.
template <typename T> Requirement<std::vector<T>> eachAtLeast(T low) {
  return {"each >= " + formatBound(low), [low](const std::vector<T> &v) {
            for (const T &x : v)
              if (x < low)
                return false;
            return true;
          }};
}

template <typename T> class PassOption : public PassOptionBase {
public:
  PassOption(Pass *owner, std::string name, T init, std::string help, Requirement<T> require = {})
      : PassOptionBase(owner, std::move(name), std::move(help)), value_(init), default_(std::move(init)),
        require_(std::move(require)) {}
  operator const T &() const { return value_; }
  const T &value() const { return value_; }
  const T *operator->() const { return &value_; }
  template <typename U> bool operator==(const U &other) const { return value_ == other; }
  template <typename U> bool operator!=(const U &other) const { return value_ != other; }
  PassOption &operator=(T v) {
    value_ = std::move(v);
    return *this;
  }
  llvm::StringRef typeName() const override;
  std::string defaultText() const override;
  std::string expects() const override;
  bool parse(llvm::StringRef text) override;

private:
  T value_, default_;
  Requirement<T> require_;
};

extern template class PassOption<bool>;
extern template class PassOption<int64_t>;
extern template class PassOption<double>;
extern template class PassOption<std::string>;
extern template class PassOption<std::vector<std::string>>;
extern template class PassOption<std::vector<int64_t>>;

} // namespace partita
