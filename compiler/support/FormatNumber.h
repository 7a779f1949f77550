//===- FormatNumber.h - a double as a user wrote it -----------------------===//
#pragma once
#include <string>

namespace partita {

/// A flag's number as the user would write it ("-0.5", "nan", "1e+06"): for
/// messages that quote a number back, and pass options made from flags.
std::string formatNumber(double v);

} // namespace partita
