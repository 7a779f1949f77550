//===- Passes.h - every pass's registration entry -------------------------===//
#pragma once
#include "compiler/pass/PassManager.h"

namespace partita {

/// Option `axis=NAME` of the passes that work on one mesh axis: not empty.
inline Requirement<std::string> meshAxisName() {
  return {"naming a mesh axis", [](const std::string &v) { return !v.empty(); }};
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
PassInfo splitPipelinePass();
PassInfo splitProgramsPass();
PassInfo weightValuesInBackwardPass();

} // namespace partita
