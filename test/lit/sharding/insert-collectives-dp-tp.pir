// RUN: partita-opt %s --split-input-file --passes='insert-collectives' | FileCheck %s

// insert-collectives takes its axes from the shardings: each step runs over
// the axis on which the Reshard's operand and result differ, and the other
// axis's split is kept. Reduce before gathering (the all-reduce moves the
// smaller, still split value); a dimension split over both axes is gathered
// minor axis first.
// CHECK-LABEL: graph @grad_partial_over_dp(
// CHECK: %g = partita.AllReduce(%dw) {axis = "dp"} : f32[8,32] {R,S(tp)}
// CHECK-NEXT: return %g
graph @grad_partial_over_dp(%dw: f32[8,32] {R,S(tp)} partial(dp)) opset 17 mesh<dp=2, tp=2> {
  %g = partita.Reshard(%dw) : f32[8,32] {R,S(tp)}
  return %g
}

// -----
// CHECK-LABEL: graph @scatter_over_dp(
// CHECK: %g = partita.ReduceScatter(%dw) {axis = "dp", dim = 0} : f32[8,32] {S(dp),S(tp)}
graph @scatter_over_dp(%dw: f32[8,32] {R,S(tp)} partial(dp)) opset 17 mesh<dp=2, tp=2> {
  %g = partita.Reshard(%dw) : f32[8,32] {S(dp),S(tp)}
  return %g
}

// -----
// CHECK-LABEL: graph @both_axes(
// CHECK: %dw.gathered = partita.AllReduce(%dw) {axis = "dp"} : f32[8,32] {R,S(tp)}
// CHECK: %g = partita.AllGather(%dw.gathered) {axis = "tp", dim = 1} : f32[8,32] {R,R}
graph @both_axes(%dw: f32[8,32] {R,S(tp)} partial(dp)) opset 17 mesh<dp=2, tp=2> {
  %g = partita.Reshard(%dw) : f32[8,32] {R,R}
  return %g
}

// -----
// CHECK-LABEL: graph @one_dim_two_axes(
// CHECK: %x.gathered = partita.AllGather(%x) {axis = "tp", dim = 0} : f32[16,4] {S(dp),R}
// CHECK: %y = partita.AllGather(%x.gathered) {axis = "dp", dim = 0} : f32[16,4] {R,R}
graph @one_dim_two_axes(%x: f32[16,4] {S(dp,tp),R}) opset 17 mesh<dp=2, tp=2> {
  %y = partita.Reshard(%x) : f32[16,4] {R,R}
  return %y
}

// -----
// CHECK-LABEL: graph @slice_tp_keep_dp(
// CHECK: %y = partita.ShardSlice(%x) {axis = "tp", dim = 1} : f32[8,4] {S(dp),S(tp)}
graph @slice_tp_keep_dp(%x: f32[8,4] {S(dp),R}) opset 17 mesh<dp=2, tp=2> {
  %y = partita.Reshard(%x) : f32[8,4] {S(dp),S(tp)}
  return %y
}
