//===- StepProfile.h - where a training step's time goes (--profile) -------===//
//
// Wall time per phase of a step, summed from step 2 on (the first includes
// one-time set-up), and at the end a table per program of the time per op
// type (or node) its profiling collected.
//===----------------------------------------------------------------------===//
#pragma once
#include "runtime/executor/Program.h"
#include <chrono>
#include <map>
#include <string>

namespace partita::rt {

class StepProfile {
public:
  explicit StepProfile(bool on) : on_(on) {}
  /// Starts step `step`'s clock.
  void beginStep(int step);
  /// Ends the phase `name` that began at the previous mark.
  void phase(llvm::StringRef name);
  /// The mean per step over steps 2..steps, then each (label, program)'s table.
  void print(llvm::raw_ostream &os, int steps, llvm::ArrayRef<std::pair<const char *, const Program *>> programs,
             bool byNode) const;

private:
  bool on_;
  int step_ = 0;
  std::chrono::steady_clock::time_point mark_;
  std::map<std::string, double> phases_; // name -> ms
};

} // namespace partita::rt
