// RUN: partita-opt %s --passes='propagate-sharding{sequence-parallel=1},insert-collectives' | FileCheck %s

// One transformer MLP sub-block with its residual: the row-parallel partial
// sum is reduce-scattered over the tokens, the residual add and LayerNorm run
// on 1/tp of the tokens, and the column-parallel projection all-gathers them.
// CHECK-LABEL: graph @block(%x: f32[2,8,16] {R,S(tp),R}) opset 17 mesh<tp=2> {
// CHECK: %n = LayerNormalization(%x, %g) {axis = -1} : f32[2,8,16] {R,S(tp),R}
// CHECK: %n.reshard = partita.AllGather(%n) {axis = "tp", dim = 1} : f32[2,8,16] {R,R,R}
// CHECK: %h = MatMul(%n.reshard, %w1) : f32[2,8,64] {R,R,S(tp)}
// CHECK: %p = MatMul(%a, %w2) : f32[2,8,16] {R,R,R} partial(tp)
// CHECK: %p.reshard = partita.ReduceScatter(%p) {axis = "tp", dim = 1} : f32[2,8,16] {R,S(tp),R}
// CHECK: %y.reshard = Add(%x, %p.reshard) : f32[2,8,16] {R,S(tp),R}
// CHECK: %y = partita.AllGather(%y.reshard) {axis = "tp", dim = 1} : f32[2,8,16] {R,R,R}
// CHECK-NOT: AllReduce
graph @block(%x: f32[2,8,16] {R,S(tp),R}) opset 17 mesh<tp=2> {
  %g = Weight() {name = "g"} : f32[16]
  %w1 = Weight() {name = "w1"} : f32[16,64] {R,S(tp)}
  %w2 = Weight() {name = "w2"} : f32[64,16] {S(tp),R}
  %n = LayerNormalization(%x, %g) {axis = -1} : f32[2,8,16]
  %h = MatMul(%n, %w1) : f32[2,8,64]
  %a = Relu(%h) : f32[2,8,64]
  %p = MatMul(%a, %w2) : f32[2,8,16]
  %y = Add(%x, %p) : f32[2,8,16]
  return %y
}
