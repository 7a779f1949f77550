// RUN: partita-opt %s --passes='data-parallel,insert-collectives' | FileCheck %s

// A constant made for one replica's batch of 2 rows, split by tp along them
// (sequence parallelism's rows), added to the batch: every replica reads the
// whole constant, so it is gathered over tp, repeated dp times, then split
// over dp (major) and tp again; each rank gets its rows of its replica's copy.
// CHECK: %c.whole = partita.AllGather(%c) {axis = "tp", dim = 0} : f32[2,4] {R,R}
// CHECK-NEXT: %c.whole.replicas = Concat(%c.whole, %c.whole) {axis = 0} : f32[4,4] {R,R}
// CHECK-NEXT: = partita.ShardSlice(%c.whole.replicas) {axis = "dp", dim = 0} : f32[4,4] {S(dp),R}
// CHECK-NEXT: %c.reshard = partita.ShardSlice({{.*}}) {axis = "tp", dim = 0} : f32[4,4] {S(dp,tp),R}
// CHECK-NEXT: %y = Add(%xs, %c.reshard) : f32[4,4] {S(dp,tp),R}
graph @g(%x: f32[2,4]) opset 17 mesh<dp=2, tp=2> {
  %k = Constant() {value = dense<f32[2,4]>[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]} : f32[2,4] {R,R}
  %c = partita.ShardSlice(%k) {axis = "tp", dim = 0} : f32[2,4] {S(tp),R}
  %xs = partita.ShardSlice(%x) {axis = "tp", dim = 0} : f32[2,4] {S(tp),R}
  %y = Add(%xs, %c) : f32[2,4] {S(tp),R}
  %z = partita.AllGather(%y) {axis = "tp", dim = 0} : f32[2,4] {R,R}
  return %z
}
