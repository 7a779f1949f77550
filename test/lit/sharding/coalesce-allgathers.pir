// RUN: partita-opt %s --passes='coalesce-collectives{axis=dp,allgather-bucket-mb=0.0001}' | FileCheck %s
// RUN: partita-opt %s --passes='coalesce-collectives{axis=dp,allgather-bucket-mb=0}' | FileCheck %s --check-prefix=OFF
// RUN: not partita-opt %s --passes='coalesce-collectives{allgather-bucket-mb=x}' 2>&1 | FileCheck %s --check-prefix=BAD

// ZeRO-1/2's step: each updated shard is all-gathered over dp and
// unflattened. The all-gathers are grouped in production order into blocking
// buckets of at most 100 bytes, each placed where its last member was, the
// readers of its results right after it; one as large as a bucket (%c, 128
// bytes) is gathered alone as it was. An all-gather read by a node of two
// operands (%n) could not follow a later bucket: it stays, as does the tp one.
// CHECK-LABEL: graph @g(
// CHECK:      %a.s = Neg(%x) : f32[4]
// CHECK-NEXT: %n = partita.AllGather(%x) {axis = "dp", dim = 0} : f32[4]
// CHECK-NEXT: %y = Add(%n, %x) : f32[4]
// CHECK-NEXT: %b.s = Exp(%x) : f32[4]
// CHECK-NEXT: %a.g, %b.g = partita.AllGather(%a.s, %b.s) {axis = "dp", dim = 0} : f32[4], f32[4]
// CHECK-NEXT: %a = partita.UnflattenShards(%a.g) {blocks = 1, dim = 0, shape = [2, 2]} : f32[2,2]
// CHECK-NEXT: %b = partita.UnflattenShards(%b.g) {blocks = 1, dim = 0, shape = [4]} : f32[4]
// CHECK-NEXT: %c.s = Abs(%z) : f32[32]
// CHECK-NEXT: %c.g = partita.AllGather(%c.s) {axis = "dp", dim = 0} : f32[32]
// CHECK-NEXT: %c = partita.UnflattenShards(%c.g) {blocks = 1, dim = 0, shape = [32]} : f32[32]
// CHECK-NEXT: %t = partita.AllGather(%x) {axis = "tp", dim = 0} : f32[4]
// CHECK-NEXT: return %a, %b, %c, %y, %t
// OFF-NOT: AllGather(%a.s, %b.s)
// BAD: coalesce-collectives: option allgather-bucket-mb expects a number >= 0, got 'x'
graph @g(%x: f32[4], %z: f32[32]) opset 17 mesh<dp=2, tp=2> {
  %a.s = Neg(%x) : f32[4]
  %a.g = partita.AllGather(%a.s) {axis = "dp", dim = 0} : f32[4]
  %a = partita.UnflattenShards(%a.g) {blocks = 1, dim = 0, shape = [2, 2]} : f32[2,2]
  %n = partita.AllGather(%x) {axis = "dp", dim = 0} : f32[4]
  %y = Add(%n, %x) : f32[4]
  %b.s = Exp(%x) : f32[4]
  %b.g = partita.AllGather(%b.s) {axis = "dp", dim = 0} : f32[4]
  %b = partita.UnflattenShards(%b.g) {blocks = 1, dim = 0, shape = [4]} : f32[4]
  %c.s = Abs(%z) : f32[32]
  %c.g = partita.AllGather(%c.s) {axis = "dp", dim = 0} : f32[32]
  %c = partita.UnflattenShards(%c.g) {blocks = 1, dim = 0, shape = [32]} : f32[32]
  %t = partita.AllGather(%x) {axis = "tp", dim = 0} : f32[4]
  return %a, %b, %c, %y, %t
}
