// RUN: not partita-opt %s --split-input-file --passes=add-loss | FileCheck %s
// RUN: not partita-opt %s --split-input-file --passes=add-loss 2>&1 | FileCheck %s --check-prefix=ERR

// Cross-entropy over the logits with an int64 labels input; loss first.
// CHECK-LABEL: graph @lm(%x: f32[2,3,5], %labels: i64[2,3]) opset 17 {
// Log-softmax spelled out (vocab-parallel cross-entropy): max, exp-sum, target logit.
// CHECK: %[[M:.*]] = ReduceMax(%x) {axes = [-1], keepdims = 1} : f32[2,3,1]
// CHECK: %[[Z:.*]] = Sub(%x, %[[M]]) : f32[2,3,5]
// CHECK: Exp(%[[Z]])
// CHECK: %loss.ignore_index = Constant() {value = dense<i64[]>[-100]} : i64[]
// CHECK: %loss = Div(
// CHECK: return %loss, %x
graph @lm(%x: f32[2,3,5]) opset 17 {
  return %x
}

// -----
// ERR: partita-opt: error: add-loss: output %ids is i64[2,3]; cross-entropy needs float logits [..., vocab]
graph @bad(%ids: i64[2,3]) opset 17 {
  return %ids
}
