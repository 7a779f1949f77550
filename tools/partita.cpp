//===- partita.cpp - the user-facing driver -------------------------------===//
//
//   partita compile model.onnx [--tp T] [--input-shape ids=2x16] -o out/
//   partita inspect out/ [--rank k]
//   partita launch -n N out/ --input ids=ids.npy --output-dir res/
//   partita run model.onnx --input ids=ids.npy --output-dir res/ [--threads N]
//   partita merge model.onnx compiled/ trained/ -o trained.onnx
//   partita plan model.onnx --devices N [--machine h100-sxm] [--compile -o out/]
//
//===----------------------------------------------------------------------===//
#include "compiler/pass/PassManager.h"
#include "tools/Commands.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

using namespace partita;

int main(int argc, char **argv) {
  registerAllPasses();
  llvm::cl::ParseCommandLineOptions(argc, argv, "Partita: ONNX transformers across many devices\n");
  if (compileSelected())
    return compileMain();
  if (runSelected())
    return runMain();
  if (launchSelected())
    return launchMain(argc, argv);
  if (workerSelected())
    return workerMain();
  if (inspectSelected())
    return inspectMain();
  if (mergeSelected())
    return mergeMain();
  if (planSelected())
    return planMain();
  llvm::errs() << "partita: error: give a subcommand: compile, plan, inspect, launch, run or merge (partita --help)\n";
  return 1;
}
