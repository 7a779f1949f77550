// RUN: partita-opt %s --split-input-file --passes='propagate-sharding,insert-collectives' | FileCheck %s

// Every op registered elementwise (OpTrait::Elementwise) gets the elementwise
// sharding rule, variadic ones too: a Sum of column-parallel results stays
// split, with no collective until the output is gathered.
// CHECK-LABEL: graph @sum(%x: f32[4,8] {R,R}) opset 17 mesh<tp=2> {
// CHECK: %s = Sum(%a, %b, %c) : f32[4,16] {R,S(tp)}
// CHECK-NEXT: %m = Mean(%a, %s) : f32[4,16] {R,S(tp)}
// CHECK-NEXT: %out.reshard = Identity(%m)
// CHECK-NEXT: %out = partita.AllGather(%out.reshard) {axis = "tp", dim = 1} : f32[4,16] {R,R}
graph @sum(%x: f32[4,8]) opset 17 mesh<tp=2> {
  %w1 = Weight() {name = "w1"} : f32[8,16] {R,S(tp)}
  %w2 = Weight() {name = "w2"} : f32[8,16] {R,S(tp)}
  %a = MatMul(%x, %w1) : f32[4,16]
  %b = MatMul(%x, %w2) : f32[4,16]
  %c = Relu(%a) : f32[4,16]
  %s = Sum(%a, %b, %c) : f32[4,16]
  %m = Mean(%a, %s) : f32[4,16]
  %out = Identity(%m) : f32[4,16]
  return %out
}
