// RUN: partita-opt %s --passes='localize{coords=dp:1,tp:1}' | FileCheck %s --check-prefix=R3
// RUN: partita-opt %s --passes='localize{rank=3}' | FileCheck %s --check-prefix=R3
// RUN: partita-opt %s --passes='localize{coords=tp:0,dp:1}' | FileCheck %s --check-prefix=R2
// RUN: partita-opt %s --passes='localize{rank=1}' | FileCheck %s --check-prefix=R1
// RUN: partita-opt %s --passes='localize{coords=dp:1,tp:1,runtime-slices=tp}' | FileCheck %s --check-prefix=RT
// RUN: partita-opt %s --passes='localize{coords=dp:0,tp:0,runtime-slices=tp}' | FileCheck %s --check-prefix=RT

// localize on a mesh<dp=2, tp=2> takes the rank's coordinate on every axis
// (rank k is row-major: k = 2*dp + tp). Each split dimension gets the block
// its axes index together (major to minor: S(dp,tp) is block 2*dp + tp);
// a local slice cuts its axis's block out of what the rank holds, where the
// ShardSlice ran, and the nodes a rewrite adds run right before their reader
// (the program keeps its order: the masked lookup stays first); each
// collective learns the size of its own axis.
// R3-LABEL: graph @lm(%ids: i64[2,4], %x: f32[2,8]) opset 17 {
// R3: %emb = Weight() {name = "emb#shard0"} : f32[8,8]
// R3: %w = Weight() {name = "w#shard0.dp_1"} : f32[4,4]
// R3: %v = Weight() {name = "v#shard0.dp.tp"} : f32[4,8]
// R3: %e.row0 = Constant() {value = dense<i64[]>[8]} : i64[]
// R3: %e = Gather(%emb, %e.safe_ids) : f32[2,4,8]
// R3: %r = partita.AllReduce(%e.masked) {axis = "tp", parts = 2} : f32[2,4,8]
// R3: %w.full = partita.AllGather(%w) {axis = "dp", dim = 0, parts = 2} : f32[8,4]
// R3: %h = MatMul(%x, %w.full) : f32[2,4]
// R3: %hg = partita.AllGather(%h) {axis = "tp", dim = 1, parts = 2} : f32[2,8]
// R3: %s.start = Constant() {value = dense<i64[1]>[4]} : i64[1]
// R3: %s = Slice(%hg, %s.start, %s.end, %s.axis) : f32[2,4]
// R3: %g = partita.AllGather(%s) {axis = "dp", dim = 0, parts = 2} : f32[4,4]
// R3: %dv = partita.EmbeddingGrad(%v, %ids, %r) {offset = 12} : f32[4,8]
// R3-NOT: mesh

// R2-LABEL: graph @lm(
// R2: %e.row0 = Constant() {value = dense<i64[]>[0]} : i64[]
// R2: %s.start = Constant() {value = dense<i64[1]>[0]} : i64[1]
// R2: %dv = partita.EmbeddingGrad(%v, %ids, %r) {offset = 8} : f32[4,8]

// With runtime-slices=tp the slice stays, with its group size: the runtime
// takes the rank's block by its place in the tp group, so both ranks' programs
// read the same here (compile asks it for dp).
// RT: %s = partita.ShardSlice(%hg) {axis = "tp", dim = 1, parts = 2} : f32[2,4]
// RT-NOT: %s.start

// R1-LABEL: graph @lm(
// R1: %e.row0 = Constant() {value = dense<i64[]>[8]} : i64[]
// R1: %s.start = Constant() {value = dense<i64[1]>[4]} : i64[1]
// R1: %dv = partita.EmbeddingGrad(%v, %ids, %r) {offset = 4} : f32[4,8]
graph @lm(%ids: i64[4,4] {S(dp),R}, %x: f32[4,8] {S(dp),R}) opset 17 mesh<dp=2, tp=2> {
  %emb = Weight() {name = "emb"} : f32[16,8] {S(tp),R}
  %w = Weight() {name = "w"} : f32[8,8] {S(dp),S(tp)}
  %v = Weight() {name = "v"} : f32[16,8] {S(dp,tp),R}
  %e = Gather(%emb, %ids) : f32[4,4,8] {S(dp),R,R} partial(tp)
  %r = partita.AllReduce(%e) {axis = "tp"} : f32[4,4,8] {S(dp),R,R}
  %w.full = partita.AllGather(%w) {axis = "dp", dim = 0} : f32[8,8] {R,S(tp)}
  %h = MatMul(%x, %w.full) : f32[4,8] {S(dp),S(tp)}
  %hg = partita.AllGather(%h) {axis = "tp", dim = 1} : f32[4,8] {S(dp),R}
  %s = partita.ShardSlice(%hg) {axis = "tp", dim = 1} : f32[4,8] {S(dp),S(tp)}
  %g = partita.AllGather(%s) {axis = "dp", dim = 0} : f32[4,8] {R,S(tp)}
  %dv = partita.EmbeddingGrad(%v, %ids, %r) : f32[16,8] {S(dp,tp),R}
  return %g, %dv, %v
}
