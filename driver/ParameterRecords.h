//===- ParameterRecords.h - what plan.json says of each trained parameter -===//
//
// The launcher writes trained parameters back, and merge makes an ONNX model
// of them, from the plan's records: each parameter's local type, its layout
// on every mesh axis, and where merge writes it (its initializer, through a
// transpose or a box, and the head tied to it). They are read off each
// stage's localized backward program (its grad.<w> outputs, in order).
//===----------------------------------------------------------------------===//
#pragma once
#include "compiler/ir/Graph.h"
#include "compiler/plan/Plan.h"
#include <map>

namespace partita {

/// The parameters one rank's backward program gives gradients for.
struct ParamRecord {
  std::vector<std::string> names;
  std::vector<bool> parts;
  std::vector<TensorType> types;
  std::vector<std::vector<ParamTarget>> targets;
  std::vector<std::map<std::string, std::string>> layouts;
};

/// Records the weights rank `r`'s step program updates (the backward program
/// `local`'s grad.<w> outputs, in their order), with their local types, their
/// layouts on every axis and where merge writes them, under `stage`; every
/// rank of a stage must update the same ones.
llvm::Error recordParameters(const Graph &global, const Graph &partitioned, const Graph &local, const RankPlan &r,
                             int64_t stage, std::map<int64_t, ParamRecord> &byStage);

/// The parameters of every stage, in stage order, into the plan.
void planParameters(const std::map<int64_t, ParamRecord> &byStage, bool pipeline, Plan &plan);

} // namespace partita
