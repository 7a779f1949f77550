// RUN: partita-opt %s --passes='add-loss,autodiff,annotate-megatron{tp=2},dce,propagate-sharding{sharded-outputs=1},insert-collectives' | FileCheck %s

// Megatron's vocab-parallel cross-entropy: with the LM head split by
// vocabulary, the loss reduces [tokens]-sized values across tp (the max, the
// exp-sum and the target logit) and never gathers the [tokens, vocab] logits;
// the gradient of the logits stays split. Only the logits graph output itself
// (kept by add-loss, dropped by `partita compile --train`) is gathered, as
// soon as the split logits exist (an output no node reads).
// CHECK-LABEL: graph @lm(
// CHECK: %[[LOGITS:.*]] = MatMul(%h, %w) : f32[2,4,16] {R,R,S(tp)}
// CHECK-NEXT: %logits = partita.AllGather(%[[LOGITS]]) {axis = "tp", dim = 2}
// CHECK-NOT: partita.AllGather
// CHECK: partita.AllReduce(%[[MAX:.*]]) {axis = "tp", reduce = "max"} : f32[2,4,1] {R,R,R}
// CHECK: Exp({{.*}}) : f32[2,4,16] {R,R,S(tp)}
// CHECK: ReduceSum({{.*}}) {keepdims = 0} : f32[2,4] {R,R} partial(tp)
// CHECK: partita.AllReduce({{.*}}) {axis = "tp"} : f32[2,4] {R,R}
// CHECK: ReduceSum({{.*}}) {keepdims = 0} : f32[2,4] {R,R} partial(tp)
// CHECK: partita.AllReduce({{.*}}) {axis = "tp"} : f32[2,4] {R,R}
// CHECK: %loss = Div(
// CHECK-NOT: partita.AllGather
// CHECK: %grad.w = Identity({{.*}}) {program = "backward"} : f32[8,16] {R,S(tp)}
// CHECK-NOT: partita.AllGather
// CHECK: return %loss, %logits, %grad.w
graph @lm(%h: f32[2,4,8]) opset 17 {
  %w = Weight() {name = "w"} : f32[8,16]
  %logits = MatMul(%h, %w) : f32[2,4,16]
  return %logits
}
