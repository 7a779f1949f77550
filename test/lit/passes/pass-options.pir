// Pass options are declared once per pass (compiler/pass/PassOption.h) and
// parsed in one place: a bool is 1/0/true/false in every pass and nothing
// else, a bad value names the option and what it expects, an unknown one the
// options the pass takes, and --list-passes prints every declaration (type,
// default, help), also of passes whose options were undocumented before.
// RUN: partita-opt %s --passes='tie-embeddings{by-value=true},fold-constants{max-elements=8},recompute{mode=none}' > /dev/null
// RUN: not partita-opt %s --passes='tie-embeddings{by-value=yes}' 2>&1 | FileCheck %s --check-prefix=TIE
// TIE: partita-opt: error: tie-embeddings: option by-value expects 0 or 1 (or false/true), got 'yes'
// RUN: not partita-opt %s --passes='propagate-sharding{sequence-parallel=yes}' 2>&1 | FileCheck %s --check-prefix=PROP
// PROP: partita-opt: error: propagate-sharding: option sequence-parallel expects 0 or 1 (or false/true), got 'yes'
// RUN: not partita-opt %s --passes='annotate-megatron{allow-replicated=on}' 2>&1 | FileCheck %s --check-prefix=ANN
// ANN: partita-opt: error: annotate-megatron: option allow-replicated expects 0 or 1 (or false/true), got 'on'
// RUN: not partita-opt %s --passes='recompute{mode=most}' 2>&1 | FileCheck %s --check-prefix=MODE
// MODE: partita-opt: error: recompute: option mode expects one of none, full, selective, got 'most'
// RUN: not partita-opt %s --passes='assign-stages{layers=3,0}' 2>&1 | FileCheck %s --check-prefix=LAYERS
// LAYERS: partita-opt: error: assign-stages: option layers expects a comma-separated list of integers each >= 1, got '3,0'
// RUN: not partita-opt %s --passes='coalesce-collectives{bucket=25}' 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// UNKNOWN: partita-opt: error: coalesce-collectives: unknown option 'bucket' (it takes axis, bucket-mb, allgather-bucket-mb)
// RUN: not partita-opt %s --passes='dce{x=1}' 2>&1 | FileCheck %s --check-prefix=NONE
// NONE: partita-opt: error: dce: unknown option 'x' (it takes none)
// RUN: partita-opt --list-passes | FileCheck %s --check-prefix=LIST
// LIST: {{^}}replicate-kv-heads  {{.*}}
// LIST: option tp=int (1): tensor-parallel size
// LIST: {{^}}zero-partition  {{.*}}
// LIST: option stage=int (1): the ZeRO stage
// LIST: {{^}}recompute  {{.*}}
// LIST: option mode=string (full): what to recompute

graph @g(%x: f32[2]) opset 17 {
  %y = Neg(%x) : f32[2]
  return %y
}
