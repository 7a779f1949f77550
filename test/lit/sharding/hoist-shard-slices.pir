// RUN: partita-opt %s --split-input-file --passes=hoist-shard-slices | FileCheck %s

// A replicated Expand cut to this rank's block becomes an Expand straight to
// the block; the one-hot of ids against all classes becomes a one-hot
// against this rank's classes (the slice moves onto the constant).
// CHECK-LABEL: graph @vocab_block(
// CHECK: %e = Expand(%d, %shape) : f32[2,8] {R,S(tp)}
// CHECK: %classes.shard = partita.ShardSlice(%classes) {axis = "tp", dim = 1} : i64[1,8] {R,S(tp)}
// CHECK: %[[EQ:.*]] = Equal(%ids, %classes.shard) : bool[2,8] {R,S(tp)}
// CHECK: %onehot = Cast(%[[EQ]]) {to = 1} : f32[2,8] {R,S(tp)}
// CHECK-NOT: ShardSlice
// CHECK: %y = Mul(%e, %onehot) : f32[2,8] {R,S(tp)}
graph @vocab_block(%d: f32[2,1] {R,R}, %ids: i64[2,1] {R,R}) opset 17 mesh<tp=2> {
  %shape = Constant() {value = dense<i64[2]>[2, 8]} : i64[2] {R}
  %e0 = Expand(%d, %shape) : f32[2,8] {R,R}
  %e = partita.ShardSlice(%e0) {axis = "tp", dim = 1} : f32[2,8] {R,S(tp)}
  %classes = Constant() {value = dense<i64[1,8]>[0, 1, 2, 3, 4, 5, 6, 7]} : i64[1,8] {R,R}
  %eq = Equal(%ids, %classes) : bool[2,8] {R,R}
  %oh = Cast(%eq) {to = 1} : f32[2,8] {R,R}
  %onehot = partita.ShardSlice(%oh) {axis = "tp", dim = 1} : f32[2,8] {R,S(tp)}
  %y = Mul(%e, %onehot) : f32[2,8] {R,S(tp)}
  return %y
}

// -----
// A value read elsewhere too stays whole: computing it split would not save it.
// CHECK-LABEL: graph @shared(
// CHECK: %x = Exp(%a) : f32[2,8] {R,R}
// CHECK: %s = partita.ShardSlice(%x) {axis = "tp", dim = 1} : f32[2,8] {R,S(tp)}
graph @shared(%a: f32[2,8] {R,R}) opset 17 mesh<tp=2> {
  %x = Exp(%a) : f32[2,8] {R,R}
  %s = partita.ShardSlice(%x) {axis = "tp", dim = 1} : f32[2,8] {R,S(tp)}
  %n = Neg(%x) : f32[2,8] {R,R}
  return %s, %n
}
