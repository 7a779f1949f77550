//===- TrainOptions.h - what a training run is asked to do ----------------===//
//
// `partita launch`'s training flags parse straight into this struct (see
// tools/LaunchCommand.cpp for each flag and its checks); the defaults here
// are the flags' defaults.
//===----------------------------------------------------------------------===//
#pragma once
#include "runtime/train/LossScaler.h"
#include "runtime/train/LrSchedule.h"
#include <string>

namespace partita::rt {

struct TrainOptions {
  std::string data;                // token ids: .npy, or a flat file of dataDtype
  std::string dataDtype = "uint16";
  std::string idsInput;            // the token-id input (default: found by trainingInputRoles)
  int steps = 0, batch = 0, seq = 0, seed = 0, microBatches = 1;
  double lr = 1e-3;
  LrScheduleOptions lrSchedule;
  double clipNorm = 0;             // 0: no clipping
  LossScaleOptions lossScale;      // an fp16 plan's (compile --precision fp16)
  bool skipNonfinite = false, progressBar = false, profile = false, profileByNode = false, noOverlap = false;
  bool memory = false; // each rank prints its MemoryLedger after training
  bool offloadOptimizer = false; // the step on the host (Session::optimizerDevice, OptimizerOffload.h)
  std::string schedule = "1f1b"; // a pipeline plan's: gpipe, 1f1b or interleaved (checkPipelineSchedule)
  std::string trace;             // a Chrome trace of every rank's steps (TraceLog.h); empty: none
  // Checkpoints (runtime/checkpoint/Checkpoint.h).
  std::string save;     // --save: the folder of checkpoints; empty: none
  int saveInterval = 0; // --save-interval: every this many steps (0: only after the last)
  int keep = 0;         // --keep: the newest this many of the run's checkpoints stay (0: all)
  std::string resume;   // --resume: a checkpoint, or a folder of them (its latest)
  bool blockingSave = false; // --blocking-save: write a checkpoint before the next step (default: in the background)
};

} // namespace partita::rt
