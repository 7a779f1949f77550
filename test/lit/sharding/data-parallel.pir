// RUN: partita-opt %s --passes='data-parallel{axis=dp},insert-collectives' | FileCheck %s
// RUN: not partita-opt %s --passes='data-parallel{axis=pp}' 2>&1 | FileCheck %s --check-prefix=AXIS

// One replica's batch of 2 on a mesh<dp=2, tp=2>, after tensor parallelism
// placed its collectives. The global graph computes 2 x 2 sequences: inputs
// whose leading dimension is the batch are S(dp) and scaled (the [1,4]
// positions are not), the split goes through the Reshape to the token rows
// (major over tp's own split: tp's all-reduce stays), the Reshape targets
// follow, the loss's sum is partial over dp and all-reduced, and the weight
// gradient (a contraction over the tokens) is all-reduced over dp at the output.
// CHECK-LABEL: graph @step(%x: f32[4,4,8] {S(dp),R,R}, %pos: f32[1,4,8] {R,R,R})
// CHECK: %h = MatMul(%xp, %w) : f32[4,4,8] {S(dp),R,S(tp)}
// CHECK: %r = partita.AllReduce(%p) {axis = "tp", parts = 2} : f32[4,4,8] {S(dp),R,R}
// CHECK: %rows.shape = Constant() {value = dense<i64[2]>[16, 8]}
// CHECK-NEXT: %rows = Reshape(%r, %rows.shape) : f32[16,8] {S(dp),R}
// CHECK-NEXT: %sum.reshard = ReduceSum(%rows) {keepdims = 0} : f32[] {} partial(dp)
// CHECK-NEXT: %sum = partita.AllReduce(%sum.reshard) {axis = "dp"} : f32[] {}
// CHECK: %xt = Transpose(%xs) {perm = [1, 0]} : f32[8,16] {R,S(dp)}
// CHECK-NEXT: %gw.reshard = MatMul(%xt, %rows) : f32[8,8] {R,R} partial(dp)
// CHECK-NEXT: %gw = partita.AllReduce(%gw.reshard) {axis = "dp"} : f32[8,8] {R,R}
// CHECK-NEXT: return %sum, %gw
// AXIS: data-parallel: axis 'pp' is not in mesh<dp=2, tp=2>
graph @step(%x: f32[2,4,8], %pos: f32[1,4,8]) opset 17 mesh<dp=2, tp=2> {
  %w = Weight() {name = "w"} : f32[8,8] {R,S(tp)}
  %w2 = Weight() {name = "w2"} : f32[8,8] {S(tp),R}
  %xp = Add(%x, %pos) : f32[2,4,8]
  %h = MatMul(%xp, %w) : f32[2,4,8] {R,R,S(tp)}
  %p = MatMul(%h, %w2) : f32[2,4,8] {R,R,R} partial(tp)
  %r = partita.AllReduce(%p) {axis = "tp", parts = 2} : f32[2,4,8] {R,R,R}
  %s = Constant() {value = dense<i64[2]>[8, 8]} : i64[2]
  %rows = Reshape(%r, %s) : f32[8,8]
  %sum = ReduceSum(%rows) {keepdims = 0} : f32[]
  %xs = Reshape(%x, %s) : f32[8,8]
  %xt = Transpose(%xs) {perm = [1, 0]} : f32[8,8]
  %gw = MatMul(%xt, %rows) : f32[8,8]
  return %sum, %gw
}
