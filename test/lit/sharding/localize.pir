// RUN: partita-opt %s --passes='localize{rank=1}' | FileCheck %s
// RUN: not partita-opt %s --passes='localize{rank=2}' 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: partita-opt: error: localize: rank 2 is outside mesh<tp=2>

// Rank 1 of 2: per-rank shapes, heads/tp in the Reshape target, its rows of the
// vocab-parallel embedding (ids 8..15, others read as zeros), the group size on
// collectives, and no shardings left.
// CHECK-LABEL: graph @lm(%ids: i64[2,4]) opset 17 {
// CHECK: %emb = Weight() {name = "emb#shard0"} : f32[8,8]
// CHECK: %w = Weight() {name = "w#shard1"} : f32[8,4]
// CHECK: %x.row0 = Constant() {value = dense<i64[]>[8]} : i64[]
// CHECK: %x.local_ids = Sub(%ids, %x.row0) : i64[2,4]
// CHECK: %x = Gather(%emb, %x.safe_ids) : f32[2,4,8]
// CHECK: %x.masked = Where(%x.mask, %x.zero, %x) : f32[2,4,8]
// CHECK: %r = partita.AllReduce(%x.masked) {axis = "tp", parts = 2} : f32[2,4,8]
// CHECK: %h = MatMul(%r, %w) : f32[2,4,4]
// CHECK: %h4.shape = Constant() {value = dense<i64[4]>[2, 4, 1, 4]} : i64[4]
// CHECK: %h4 = Reshape(%h, %h4.shape) : f32[2,4,1,4]
// CHECK: %out = partita.AllGather(%h4) {axis = "tp", dim = 2, parts = 2} : f32[2,4,2,4]
// CHECK-NOT: S(tp)
// CHECK-NOT: mesh
graph @lm(%ids: i64[2,4] {R,R}) opset 17 mesh<tp=2> {
  %emb = Weight() {name = "emb"} : f32[16,8] {S(tp),R}
  %w = Weight() {name = "w"} : f32[8,8] {R,S(tp)}
  %x = Gather(%emb, %ids) : f32[2,4,8] {R,R,R} partial(tp)
  %r = partita.AllReduce(%x) {axis = "tp"} : f32[2,4,8] {R,R,R}
  %h = MatMul(%r, %w) : f32[2,4,8] {R,R,S(tp)}
  %hs = Constant() {value = dense<i64[4]>[2, 4, 2, 4]} : i64[4]
  %h4 = Reshape(%h, %hs) : f32[2,4,2,4] {R,R,S(tp),R}
  %out = partita.AllGather(%h4) {axis = "tp", dim = 2} : f32[2,4,2,4] {R,R,R,R}
  return %out
}
