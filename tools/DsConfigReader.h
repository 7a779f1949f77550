//===- DsConfigReader.h - typed reads of a DeepSpeed config ---------------===//
//
// Internal to tools/DsConfig*.cpp. A Section reads one JSON object of the
// config; a wrong type or range records the first error, naming the key's
// path ("zero_optimization.stage: expected an integer 0-3, got \"two\""),
// and the read gives nothing.
//===----------------------------------------------------------------------===//
#pragma once
#include "tools/DsConfig.h"
#include "llvm/Support/JSON.h"
#include <set>

namespace partita::ds {

/// The first error of a resolution, and the warnings (one per key).
struct Reader {
  std::string error;
  DsMapping &out;
  std::set<std::string> warned;

  void fail(const std::string &message) {
    if (error.empty())
      error = message;
  }
  /// "ds-config key 'K' is not implemented; ignored" (+ why), once per key.
  void notImplemented(const std::string &key, const std::string &why = "");
  /// A warning of its own about `key`, once per key.
  void warn(const std::string &key, const std::string &message);
  /// Sets `flag` (a later key setting the same flag replaces the earlier).
  void set(const std::string &flag, const std::string &value, const std::string &key) {
    for (DsSetting &s : out.settings)
      if (s.flag == flag) {
        s = {flag, value, key};
        return;
      }
    out.settings.push_back({flag, value, key});
  }
};

class Section {
public:
  Section(Reader &r, const llvm::json::Object *object, std::string prefix)
      : r_(r), object_(object), prefix_(std::move(prefix)) {}

  bool present() const { return object_ != nullptr; }
  bool has(llvm::StringRef key) const { return object_ && object_->get(key); }
  std::string path(llvm::StringRef key) const { return prefix_.empty() ? key.str() : prefix_ + "." + key.str(); }
  const std::string &prefix() const { return prefix_; }
  std::vector<std::string> keys() const; // sorted
  /// Warns that each key other than `used` is not implemented (in key order).
  void notImplementedExcept(const std::set<std::string> &used) const;
  Reader &reader() const { return r_; }
  const llvm::json::Value *get(llvm::StringRef key) const { return object_ ? object_->get(key) : nullptr; }

  /// An integer in [lo, hi]; `what` says so in an error ("an integer 0-3").
  std::optional<int64_t> integer(llvm::StringRef key, int64_t lo, int64_t hi, llvm::StringRef what) const;
  /// A finite number in [lo, hi] (lo excluded when `loOpen`).
  std::optional<double> number(llvm::StringRef key, double lo, double hi, bool loOpen, llvm::StringRef what) const;
  std::optional<bool> boolean(llvm::StringRef key) const;
  /// One of `allowed` (compared case-insensitively when `anyCase`), as written.
  std::optional<std::string> choice(llvm::StringRef key, llvm::ArrayRef<llvm::StringRef> allowed, bool anyCase) const;
  /// An array of numbers (`betas`).
  std::optional<std::vector<double>> numbers(llvm::StringRef key, size_t count, llvm::StringRef what) const;
  /// The object under `key` (absent: a Section that has nothing).
  Section object(llvm::StringRef key) const;
  /// Records "PATH: expected WHAT, got VALUE".
  void typeError(llvm::StringRef key, llvm::StringRef what, const llvm::json::Value &got) const;

private:
  Reader &r_;
  const llvm::json::Object *object_;
  std::string prefix_;
};

/// A flag value as the user would type it, exactly (a double to 17 digits).
std::string flagNumber(double v);

// The sections, each mapping its keys for r.out's command (DsConfigSections.cpp).
void mapBatch(const Section &top, const DsContext &ctx);
void mapPrecision(const Section &top, const DsContext &ctx);
void mapOptimizer(const Section &top, const DsContext &ctx);
void mapZero(const Section &top, const DsContext &ctx);
void mapScheduler(const Section &top, const DsContext &ctx);
void mapLaunchScalars(const Section &top);

} // namespace partita::ds
