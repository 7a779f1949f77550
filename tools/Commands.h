//===- Commands.h - the partita driver's subcommands ----------------------===//
#pragma once

namespace partita {

// Each returns the process exit code; `selected` says whether the command
// line chose that subcommand.
bool compileSelected();
int compileMain();
bool runSelected();
int runMain();
bool launchSelected();
int launchMain(int argc, char **argv);
bool workerSelected();
int workerMain();
bool inspectSelected();
int inspectMain();
bool mergeSelected();
int mergeMain();
bool planSelected();
int planMain();

} // namespace partita
