// RUN: partita-opt %s --split-input-file --passes='annotate-megatron{tp=2}' | FileCheck %s
// RUN: partita-opt %s --split-input-file --passes='annotate-megatron{tp=2,axis=mp}' | FileCheck %s --check-prefix=MP

// annotate-megatron adds its axis to the graph's mesh, keeping the axes
// already there (dp), or resizes it where the mesh has it.
// CHECK-LABEL: graph @add_axis(%x: f32[4,8] {S(dp),R}) opset 17 mesh<dp=2, tp=2> {
// CHECK: %w1 = Weight() {name = "w1"} : f32[8,32] {R,S(tp)}
// CHECK: %w2 = Weight() {name = "w2"} : f32[32,8] {S(tp),R}
// MP-LABEL: graph @add_axis(%x: f32[4,8] {S(dp),R}) opset 17 mesh<dp=2, mp=2> {
// MP: %w1 = Weight() {name = "w1"} : f32[8,32] {R,S(mp)}
// MP: %w2 = Weight() {name = "w2"} : f32[32,8] {S(mp),R}
graph @add_axis(%x: f32[4,8] {S(dp),R}) opset 17 mesh<dp=2> {
  %w1 = Weight() {name = "w1"} : f32[8,32]
  %w2 = Weight() {name = "w2"} : f32[32,8]
  %h = MatMul(%x, %w1) : f32[4,32]
  %g = partita.Gelu(%h) : f32[4,32]
  %y = MatMul(%g, %w2) : f32[4,8]
  return %y
}

// -----
// CHECK-LABEL: graph @resize_axis(%x: f32[4,8]) opset 17 mesh<tp=2, dp=2> {
// MP-LABEL: graph @resize_axis(%x: f32[4,8]) opset 17 mesh<tp=4, dp=2, mp=2> {
graph @resize_axis(%x: f32[4,8]) opset 17 mesh<tp=4, dp=2> {
  %w1 = Weight() {name = "w1"} : f32[8,32]
  %w2 = Weight() {name = "w2"} : f32[32,8]
  %h = MatMul(%x, %w1) : f32[4,32]
  %g = partita.Gelu(%h) : f32[4,32]
  %y = MatMul(%g, %w2) : f32[4,8]
  return %y
}
