// RUN: not partita-opt %s --passes='data-parallel{axis=dp}' 2>&1 | FileCheck %s

// An op no sharding rule carries the batch through (Einsum here) computes
// replicated: its operand is gathered over dp, and its result, shaped for one
// replica's batch, cannot hold dp of them. The error names the node.
// CHECK: data-parallel: the batch (2 per replica, the leading dimension of input %x) cannot be scaled by dp=2: verifier: node '%e' (Einsum): result %e is declared f32[2,4] but inference gives f32[4,4] (no sharding rule of that op carries the batch split through it)
graph @g(%x: f32[2,4,8]) opset 17 mesh<dp=2> {
  %e = Einsum(%x) {equation = "bti->bt"} : f32[2,4]
  return %e
}
