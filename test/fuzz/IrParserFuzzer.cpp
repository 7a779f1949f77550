//===- IrParserFuzzer.cpp - parseGraph (and the verifier, as tools run it) ===//
#include "compiler/ir/Parser.h"
#include "compiler/ir/Printer.h"
#include "compiler/ir/Verifier.h"
#include "llvm/Support/raw_ostream.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string text(reinterpret_cast<const char *>(data), size);
  auto g = partita::parseGraph(text, "fuzz.pir");
  if (!g) {
    llvm::consumeError(g.takeError());
    return 0;
  }
  if (auto err = partita::verifyGraph(**g)) {
    llvm::consumeError(std::move(err));
    return 0;
  }
  std::string printed;
  llvm::raw_string_ostream os(printed);
  partita::printGraph(**g, os);
  return 0;
}
