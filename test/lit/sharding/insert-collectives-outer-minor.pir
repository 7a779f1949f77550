// RUN: partita-opt %s --passes=insert-collectives | FileCheck %s

// A dimension split by dp (major, contiguous blocks) and tp with an outer
// factor (strided inside each dp block, as sequence parallelism splits the
// [B*T] rows): the outer factor belongs to tp, the minor-most axis. Adding dp
// to a tp-strided value gathers tp, slices dp contiguously, then slices tp
// strided again; removing dp does the reverse. dp never gets an outer factor.
// CHECK: %x.gathered = partita.AllGather(%x) {axis = "tp", dim = 0, outer = 2} : f32[16,4] {R,R}
// CHECK-NEXT: = partita.ShardSlice(%x.gathered) {axis = "dp", dim = 0} : f32[16,4] {S(dp),R}
// CHECK-NEXT: %y = partita.ShardSlice({{.*}}) {axis = "tp", dim = 0, outer = 2} : f32[16,4] {S(dp,tp,outer=2),R}
// CHECK-NEXT: %y.gathered = partita.AllGather(%y) {axis = "tp", dim = 0, outer = 2} : f32[16,4] {S(dp),R}
// CHECK-NEXT: = partita.AllGather(%y.gathered) {axis = "dp", dim = 0} : f32[16,4] {R,R}
// CHECK-NEXT: %z = partita.ShardSlice({{.*}}) {axis = "tp", dim = 0, outer = 2} : f32[16,4] {S(tp,outer=2),R}
graph @g(%x: f32[16,4] {S(tp,outer=2),R}) opset 17 mesh<dp=2, tp=2> {
  %y = partita.Reshard(%x) : f32[16,4] {S(dp,tp,outer=2),R}
  %z = partita.Reshard(%y) : f32[16,4] {S(tp,outer=2),R}
  return %y, %z
}
