// RUN: partita-opt %s --passes='autodiff,annotate-megatron{tp=2},propagate-sharding{sharded-outputs=1},insert-collectives' | FileCheck %s

// Megatron's f/g pair falls out of autodiff + the reshard planner: the
// forward all-reduce after the row-parallel product, and in the backward pass
// one all-reduce of the gradient flowing into the column-parallel input (the
// sum over ranks of dY_r · W1_rᵀ). Weight gradients stay sharded like their
// weights; the replicated LayerNorm scale's gradient is reduced.
// CHECK-LABEL: graph @mlp(
// CHECK: %p = MatMul(%g, %w2) : f32[4,8] {R,R} partial(tp)
// CHECK: %p.reshard = partita.AllReduce(%p) {axis = "tp"} : f32[4,8] {R,R}
// CHECK-COUNT-1: partita.AllReduce({{.*}}) {axis = "tp"} : f32[4,8] {R,R}
// CHECK-NOT: partita.AllReduce({{.*}}) {axis = "tp"} : f32[4,8]
// CHECK-NOT: partita.AllGather
// CHECK: return %loss, %grad.s, %grad.w1, %grad.b1, %grad.w2, %grad.b2
graph @mlp(%x: f32[4,8]) opset 17 {
  %s = Weight() {name = "s"} : f32[8]
  %w1 = Weight() {name = "w1"} : f32[8,32]
  %b1 = Weight() {name = "b1"} : f32[32]
  %w2 = Weight() {name = "w2"} : f32[32,8]
  %b2 = Weight() {name = "b2"} : f32[8]
  %n = LayerNormalization(%x, %s) {axis = -1} : f32[4,8]
  %h = partita.Linear(%n, %w1, %b1) : f32[4,32]
  %g = partita.Gelu(%h) : f32[4,32]
  %p = MatMul(%g, %w2) : f32[4,8]
  %y = Add(%p, %b2) : f32[4,8]
  %loss = ReduceSum(%y) {keepdims = 0} : f32[]
  return %loss
}
