//===- Passes.h - every pass's registration entry -------------------------===//
#pragma once
#include "compiler/pass/PassManager.h"

namespace partita {

/// Option `axis=NAME` of the passes that work on one mesh axis.
inline llvm::Error setAxisOption(llvm::StringRef pass, llvm::StringRef value, std::string &axis) {
  if (value.empty())
    return passError(pass, "option axis expects a mesh axis name");
  axis = value.str();
  return llvm::Error::success();
}

PassInfo foldConstantsPass();
PassInfo removeIdentityPass();
PassInfo deadCodeEliminationPass();
PassInfo commonSubexpressionPass();
PassInfo fuseLinearPass();
PassInfo fuseLayerNormPass();
PassInfo fuseGeluPass();
PassInfo canonicalizePass();
PassInfo annotateMegatronPass();
PassInfo propagateShardingPass();
PassInfo insertCollectivesPass();
PassInfo hoistShardSlicesPass();
PassInfo localizePass();
PassInfo dataParallelPass();
PassInfo coalesceCollectivesPass();
PassInfo autodiffPass();
PassInfo addLossPass();
PassInfo splitFusedProjectionsPass();
PassInfo replicateKvHeadsPass();
PassInfo classifyParametersPass();
PassInfo tieEmbeddingsPass();
PassInfo addOptimizerPass();
PassInfo zeroPartitionPass();
PassInfo assignStagesPass();
PassInfo recomputePass();
PassInfo copySharedWeightsPass();
PassInfo mixedPrecisionPass();
PassInfo saveHalfActivationsPass();
PassInfo halfGradientsPass();
PassInfo halfParametersPass();

} // namespace partita
