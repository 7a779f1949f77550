//===- FormatNumber.cpp ---------------------------------------------------===//
#include "compiler/support/FormatNumber.h"
#include <sstream>

namespace partita {

std::string formatNumber(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

} // namespace partita
