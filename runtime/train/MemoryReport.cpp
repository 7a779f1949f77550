//===- MemoryReport.cpp ---------------------------------------------------===//
#include "runtime/train/MemoryReport.h"
#include "llvm/Support/Format.h"

namespace partita::rt {

void printMemoryLine(llvm::raw_ostream &os, int rank, llvm::StringRef how, const MemoryLedger::Bytes &bytes,
                     size_t peak, llvm::StringRef what) {
  std::string line;
  llvm::raw_string_ostream s(line);
  s << what << " " << rank << " (" << how << ", MB):";
  for (size_t c = 0; c < kMemoryCategories; ++c)
    s << (c ? ", " : " ") << memoryCategoryName(static_cast<MemoryCategory>(c)) << " "
      << llvm::format("%.6f", static_cast<double>(bytes[c]) / 1e6);
  s << "; peak " << llvm::format("%.4f", static_cast<double>(peak) / 1e6) << " (" << peak << " bytes)\n";
  os << s.str(); // one write: ranks share the terminal
  os.flush();
}

void printSendCopiesLine(llvm::raw_ostream &os, int rank, llvm::StringRef how, size_t bytes) {
  std::string line;
  llvm::raw_string_ostream s(line);
  s << "pipeline send copies of rank " << rank << " (" << how << ", MB): at most "
    << llvm::format("%.6f", static_cast<double>(bytes) / 1e6) << " in flight\n";
  os << s.str();
  os.flush();
}

} // namespace partita::rt
