//===- Passes.h - every pass's registration entry -------------------------===//
#pragma once
#include "compiler/pass/PassManager.h"

namespace partita {

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
PassInfo classifyParametersPass();
PassInfo tieEmbeddingsPass();

} // namespace partita
