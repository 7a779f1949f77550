// RUN: partita-opt %s --passes='add-optimizer,propagate-sharding{sharded-outputs=1},insert-collectives,data-parallel{axis=dp},zero-partition{stage=2},insert-collectives,dce' | FileCheck %s
// RUN: partita-opt %s --passes='add-optimizer,propagate-sharding{sharded-outputs=1},insert-collectives,data-parallel{axis=dp},zero-partition,insert-collectives,dce' | FileCheck %s --check-prefix=STAGE1
// RUN: partita-opt %s --passes='add-optimizer,propagate-sharding{sharded-outputs=1},insert-collectives,data-parallel{axis=dp},zero-partition{stage=2},insert-collectives,dce,localize{coords=dp:1,tp:0}' | FileCheck %s --check-prefix=LOCAL
// RUN: partita-opt %s --passes='add-optimizer,propagate-sharding{sharded-outputs=1},insert-collectives,data-parallel{axis=dp},zero-partition{stage=3},insert-collectives,dce' | FileCheck %s --check-prefix=STAGE3
// RUN: partita-opt %s --passes='add-optimizer,propagate-sharding{sharded-outputs=1},insert-collectives,data-parallel{axis=dp},zero-partition{stage=3},insert-collectives,dce,localize{coords=dp:1,tp:0}' | FileCheck %s --check-prefix=LOCAL3
// RUN: not partita-opt %s --passes='zero-partition{stage=4}' 2>&1 | FileCheck %s --check-prefix=STAGE4
// RUN: partita-opt %s --passes='add-optimizer,propagate-sharding{sharded-outputs=1},insert-collectives,data-parallel{axis=dp},zero-partition{stage=3,prefetch=0},insert-collectives,dce' | FileCheck %s --check-prefix=NOPREFETCH
// RUN: partita-opt %s --passes='add-optimizer,propagate-sharding{sharded-outputs=1},insert-collectives,data-parallel{axis=dp},zero-partition{stage=3,persist-below=10},insert-collectives,dce' | FileCheck %s --check-prefix=PERSIST
// RUN: not partita-opt %s --passes='zero-partition{stage=3,prefetch=-2}' 2>&1 | FileCheck %s --check-prefix=BADPREFETCH
// RUN: not partita-opt %s --passes='zero-partition' 2>&1 | FileCheck %s --check-prefix=NOADAM
// RUN: not partita-opt %s --passes='zero-partition{axis=ep}' 2>&1 | FileCheck %s --check-prefix=AXIS

// ZeRO on mesh<dp=2, tp=2>. w1 [8,6] is column-parallel: each tp rank's
// block has 8 x 3 = 24 elements, one flat buffer each (blocks = 2, [48]),
// split over dp into 12 per rank. b [5] is replicated: one buffer padded to
// 6, 3 per rank. The moments are those parts; the step slices the rank's
// part of the flattened weight (no communication), updates it and
// all-gathers the updated buffer over dp into the weight.
// CHECK-LABEL: graph @g(%x: f32[8,8] {S(dp),R}
// CHECK-SAME: %accumulated_grad.w1: f32[48] {S(tp,dp)}, %adam_m.w1: f32[48] {S(tp,dp)}, %adam_v.w1: f32[48] {S(tp,dp)},
// CHECK-SAME: %accumulated_grad.b: f32[6] {S(dp)}, %adam_m.b: f32[6] {S(dp)}, %adam_v.b: f32[6] {S(dp)})
// Stage 2: w1's gradient, partial over dp, is flattened and reduce-scattered
// in the backward (each rank receives the sum of its part only); the square
// sums of the gradient parts are partial over dp too: added up (through tp's
// all-reduce, which is linear) and all-reduced over dp once.
// CHECK: %[[G:.*]] = MatMul(%xt, %h) : f32[8,6] {R,S(tp)} partial(dp)
// CHECK-NEXT: %[[GF:.*]] = partita.FlattenShards(%[[G]]) {blocks = 2, dim = 1, length = 24, program = "backward"} : f32[48] {S(tp)} partial(dp)
// CHECK-NEXT: %grad.w1 = partita.ReduceScatter(%[[GF]]) {axis = "dp", dim = 0, program = "backward"} : f32[48] {S(tp,dp)}
// CHECK: %[[SQ:.*]] = ReduceSum({{.*}}) {keepdims = 0, program = "grad_norm"} : f32[] {} partial(tp,dp)
// Each weight's step in turn (one weight's flat copies alive at a time).
// CHECK-NEXT: %w1.flat = partita.FlattenShards(%w1) {blocks = 2, dim = 1, length = 24, program = "step"} : f32[48] {S(tp)}
// CHECK-NEXT: %w1.owned = partita.ShardSlice(%w1.flat) {axis = "dp", dim = 0, program = "step"} : f32[48] {S(tp,dp)}
// CHECK-NEXT: %[[UP:.*]], %updated.adam_m.w1, %updated.adam_v.w1 = partita.AdamW(%lr, %bias_correction1, %bias_correction2, %w1.owned, %accumulated_grad.w1, %adam_m.w1, %adam_v.w1, %grad_scale)
// CHECK-SAME: : f32[48] {S(tp,dp)}, f32[48] {S(tp,dp)}, f32[48] {S(tp,dp)}
// CHECK-NEXT: %[[GATHERED:.*]] = partita.AllGather(%[[UP]]) {axis = "dp", dim = 0, program = "step"} : f32[48] {S(tp)}
// CHECK-NEXT: %updated.w1 = partita.UnflattenShards(%[[GATHERED]]) {blocks = 2, dim = 1, program = "step", shape = [8, 6]} : f32[8,6] {R,S(tp)}
// CHECK: %b.flat = partita.FlattenShards(%b) {blocks = 1, dim = 0, length = 6, program = "step"} : f32[6] {R}
// CHECK: %updated.b = partita.UnflattenShards({{.*}}) {blocks = 1, dim = 0, program = "step", shape = [5]} : f32[5] {R}
// CHECK: %[[SQTP:.*]] = partita.AllReduce(%[[SQ]]) {axis = "tp"} : f32[] {} partial(dp)
// CHECK-NEXT: %[[SUM:.*]] = Add({{.*}}%[[SQTP]]) {program = "grad_norm"} : f32[] {} partial(dp)
// CHECK-NEXT: %[[TOTAL:.*]] = partita.AllReduce(%[[SUM]]) {axis = "dp", program = "grad_norm"} : f32[] {}
// CHECK-NEXT: %grad_norm = Sqrt(%[[TOTAL]])
// CHECK-NOT: ReduceScatter
// CHECK: return %loss, %grad.w1, %grad.b, %updated.w1, %updated.adam_m.w1

// Stage 1: the backward reduce-scatters w1's flat gradient as stage 2 does,
// marked defer = 1 (the runtime sums the whole gradient over micro-batches
// where the reduce-scatter stages it and reduces once, at the last); the step
// reads the part.
// STAGE1: %accumulated_grad.w1: f32[48] {S(tp,dp)}, %adam_m.w1: f32[48] {S(tp,dp)}, %adam_v.w1: f32[48] {S(tp,dp)}
// STAGE1: %grad.w1 = partita.ReduceScatter(%{{.*}}) {axis = "dp", defer = 1, dim = 0, program = "backward"} : f32[48] {S(tp,dp)}
// STAGE1-NOT: AllReduce({{.*}}) {axis = "dp"} : f32[8,6]

// Rank dp:1, tp:0 holds its block (blocks = 1) and the second half of it.
// LOCAL: %adam_m.w1: f32[12]
// LOCAL: %w1.flat = partita.FlattenShards(%w1) {blocks = 1, dim = 1, length = 24, program = "step"} : f32[24]
// LOCAL: %w1.owned.start = Constant() {value = dense<i64[1]>[12]} : i64[1]
// LOCAL: %w1.owned.end = Constant() {value = dense<i64[1]>[24]} : i64[1]
// LOCAL: %w1.owned = Slice(%w1.flat, %w1.owned.start, %w1.owned.end, %w1.owned.axis) : f32[12]
// LOCAL: %updated.w1 = partita.UnflattenShards({{.*}}) {blocks = 1, dim = 1, program = "step", shape = [8, 3]} : f32[8,3]

// Stage 3: each weight is its part of the flat buffer (a Weight of its own,
// updated in place by the step: no all-gather after AdamW), all-gathered
// over dp and unflattened right before its first use; the gradients are
// stage 2's.
// STAGE3: %w1 = Weight() {name = "w1#zero3"} : f32[48] {S(tp,dp)}
// STAGE3: %b = Weight() {name = "b#zero3"} : f32[6] {S(dp)}
// The gathers are async, each started where the one before it was (b's
// prefetched while w1's layer computes).
// STAGE3-NEXT: %w1.gathered = partita.AllGather(%w1) {async = 1, axis = "dp", dim = 0, program = "forward"} : f32[48] {S(tp)}
// STAGE3-NEXT: %b.gathered = partita.AllGather(%b) {async = 1, axis = "dp", dim = 0, program = "forward"} : f32[6] {R}
// STAGE3-NEXT: %w1.full = partita.UnflattenShards(%w1.gathered) {blocks = 2, dim = 1, program = "forward", shape = [8, 6]} : f32[8,6] {R,S(tp)}
// STAGE3-NEXT: %h = MatMul(%x, %w1.full)
// STAGE3: %grad.w1 = partita.ReduceScatter(%[[GF3:.*]]) {axis = "dp", dim = 0, program = "backward"} : f32[48] {S(tp,dp)}
// STAGE3: %b.full = partita.UnflattenShards(%b.gathered) {blocks = 1, dim = 0, program = "forward", shape = [5]} : f32[5] {R}
// STAGE3-NEXT: Mul(%b.full, %c.reshard)
// STAGE3: %updated.w1, %updated.adam_m.w1, %updated.adam_v.w1 = partita.AdamW(%lr, %bias_correction1, %bias_correction2, %w1, %accumulated_grad.w1, %adam_m.w1, %adam_v.w1, %grad_scale)
// STAGE3-SAME: : f32[48] {S(tp,dp)}, f32[48] {S(tp,dp)}, f32[48] {S(tp,dp)}
// STAGE3-NOT: AllGather
// STAGE3: return %loss, %grad.w1, %grad.b, %updated.w1,
// Rank dp:1, tp:0 holds 12 elements of w1: the second half of its tp block's buffer.
// LOCAL3: %adam_m.w1: f32[12]
// LOCAL3: %w1 = Weight() {name = "w1#zero3#shard0.tp.dp"} : f32[12]
// LOCAL3: %w1.gathered = partita.AllGather(%w1) {async = 1, axis = "dp", dim = 0, parts = 2, program = "forward"} : f32[24]
// LOCAL3: %w1.full = partita.UnflattenShards(%w1.gathered) {blocks = 1, dim = 1, program = "forward", shape = [8, 3]} : f32[8,3]
// STAGE4: zero-partition: option stage expects an integer in [1, 3], got '4'
// prefetch=0: each gather starts where its weight is first used.
// NOPREFETCH: %w1.gathered = partita.AllGather(%w1)
// NOPREFETCH-NEXT: %w1.full = partita.UnflattenShards(%w1.gathered)
// NOPREFETCH: %b.gathered = partita.AllGather(%b)
// NOPREFETCH-NEXT: %b.full = partita.UnflattenShards(%b.gathered)
// persist-below=10: b (5 elements) stays whole, as at stage 2; w1 (48) is partitioned.
// PERSIST: %w1 = Weight() {name = "w1#zero3"} : f32[48] {S(tp,dp)}
// PERSIST: %b = Weight() {name = "b"} : f32[5] {R}
// PERSIST: %updated.b = partita.UnflattenShards({{.*}}) {blocks = 1, dim = 0, program = "step", shape = [5]} : f32[5] {R}
// BADPREFETCH: zero-partition: option prefetch expects an integer >= 0, got '-2'
// NOADAM: zero-partition: the graph has no partita.AdamW node: run add-optimizer first
// AXIS: zero-partition: axis 'ep' is not in mesh<dp=2, tp=2>
graph @g(%x: f32[4,8]) opset 17 mesh<dp=2, tp=2> {
  %w1 = Weight() {name = "w1"} : f32[8,6] {R,S(tp)}
  %b = Weight() {name = "b"} : f32[5] {R}
  %h = MatMul(%x, %w1) : f32[4,6]
  %s = ReduceSum(%h) {keepdims = 0} : f32[]
  %c = ReduceSum(%x) {keepdims = 0} : f32[]
  %loss = Add(%s, %c) : f32[]
  %xt = Transpose(%x) {perm = [1, 0]} : f32[8,4]
  %grad.w1 = MatMul(%xt, %h) : f32[8,6]
  %grad.b = Mul(%b, %c) : f32[5]
  return %loss, %grad.w1, %grad.b
}
