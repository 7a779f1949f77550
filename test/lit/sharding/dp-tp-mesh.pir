// RUN: partita-opt %s --passes='propagate-sharding{axis=dp},propagate-sharding{axis=tp}' | FileCheck %s --check-prefix=PROP
// RUN: partita-opt %s --passes='propagate-sharding{axis=dp},propagate-sharding{axis=tp},insert-collectives' | FileCheck %s --check-prefix=COLL
// RUN: partita-opt %s --passes='propagate-sharding{axis=dp},insert-collectives' | FileCheck %s --check-prefix=DP

// A Megatron MLP on a mesh<dp=2, tp=2> whose input is split by batch over dp.
// Each propagation works along its own axis and keeps the other's: the
// activations are S(dp) on the batch and S(tp) on the hidden dim, the
// row-parallel product is partial over tp only, so its all-reduce runs over
// tp (the value stays S(dp)), and the output is gathered over dp.
// PROP-LABEL: graph @mlp(%x: f32[4,8] {S(dp),R}) opset 17 mesh<dp=2, tp=2> {
// PROP: %h = partita.Linear(%x, %w1, %b1) : f32[4,32] {S(dp),S(tp)}
// PROP: %g = partita.Gelu(%h) : f32[4,32] {S(dp),S(tp)}
// PROP: %p = MatMul(%g, %w2) : f32[4,8] {S(dp),R} partial(tp)
// PROP: %p.reshard = partita.Reshard(%p) : f32[4,8] {S(dp),R}
// PROP: %y.reshard = Add(%p.reshard, %b2) : f32[4,8] {S(dp),R}
// PROP: %y = partita.Reshard(%y.reshard) : f32[4,8] {R,R}
// COLL-LABEL: graph @mlp(
// COLL: %p.reshard = partita.AllReduce(%p) {axis = "tp"} : f32[4,8] {S(dp),R}
// COLL: %y.reshard = Add(%p.reshard, %b2) : f32[4,8] {S(dp),R}
// COLL: %y = partita.AllGather(%y.reshard) {axis = "dp", dim = 0} : f32[4,8] {R,R}
// COLL: return %y
// With the dp axis alone (not the mesh's last axis), tp is left as seeded:
// the weights keep their tp splits and no tp communication appears.
// DP-LABEL: graph @mlp(
// DP: %h = partita.Linear(%x, %w1, %b1) : f32[4,32] {S(dp),R}
// DP: %y = partita.AllGather(%y.reshard) {axis = "dp", dim = 0} : f32[4,8] {R,R}
// DP-NOT: axis = "tp"
graph @mlp(%x: f32[4,8] {S(dp),R}) opset 17 mesh<dp=2, tp=2> {
  %w1 = Weight() {name = "w1"} : f32[8,32] {R,S(tp)}
  %b1 = Weight() {name = "b1"} : f32[32] {S(tp)}
  %w2 = Weight() {name = "w2"} : f32[32,8] {S(tp),R}
  %b2 = Weight() {name = "b2"} : f32[8]
  %h = partita.Linear(%x, %w1, %b1) : f32[4,32]
  %g = partita.Gelu(%h) : f32[4,32]
  %p = MatMul(%g, %w2) : f32[4,8]
  %y = Add(%p, %b2) : f32[4,8]
  return %y
}

