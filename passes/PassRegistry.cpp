//===- PassRegistry.cpp - the one list of passes --------------------------===//
#include "passes/Passes.h"

namespace partita {

void registerAllPasses() {
  static bool done = false;
  if (done)
    return;
  done = true;
  for (PassInfo (*make)() : {foldConstantsPass, removeIdentityPass, deadCodeEliminationPass,
                             commonSubexpressionPass, fuseLinearPass, fuseLayerNormPass,
                             fuseGeluPass, canonicalizePass, annotateMegatronPass, propagateShardingPass,
                             insertCollectivesPass, hoistShardSlicesPass, localizePass, dataParallelPass, coalesceCollectivesPass, autodiffPass, addLossPass, splitFusedProjectionsPass, replicateKvHeadsPass,
                             classifyParametersPass, tieEmbeddingsPass, addOptimizerPass, zeroPartitionPass, assignStagesPass, recomputePass,
                             copySharedWeightsPass, mixedPrecisionPass, saveHalfActivationsPass, halfGradientsPass,
                             halfParametersPass, weightValuesInBackwardPass, splitPipelinePass, splitProgramsPass})
    PassRegistry::get().add(make());
}

} // namespace partita
