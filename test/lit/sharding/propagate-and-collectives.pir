// RUN: partita-opt %s --split-input-file --passes='propagate-sharding' | FileCheck %s --check-prefix=PROP
// RUN: partita-opt %s --split-input-file --passes='propagate-sharding,insert-collectives' | FileCheck %s --check-prefix=COLL

// Megatron MLP: the row-parallel product is partial; the bias Add needs it
// replicated, so exactly one all-reduce appears, before the bias.
// PROP-LABEL: graph @mlp(%x: f32[4,8] {R,R}) opset 17 mesh<tp=2> {
// PROP: %h = partita.Linear(%x, %w1, %b1) : f32[4,32] {R,S(tp)}
// PROP: %g = partita.Gelu(%h) : f32[4,32] {R,S(tp)}
// PROP: %p = MatMul(%g, %w2) : f32[4,8] {R,R} partial(tp)
// PROP: %p.reshard = partita.Reshard(%p) : f32[4,8] {R,R}
// PROP: %y = Add(%p.reshard, %b2) : f32[4,8] {R,R}
// COLL-LABEL: graph @mlp(
// COLL: %p.reshard = partita.AllReduce(%p) {axis = "tp"} : f32[4,8] {R,R}
// COLL-NOT: partita.All
graph @mlp(%x: f32[4,8]) opset 17 mesh<tp=2> {
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

// -----
// Column-parallel output returned: gathered along its split dimension. A
// replicated weight used by a split activation is sliced locally.
// COLL-LABEL: graph @gather_out(%x: f32[4,8] {R,R}) opset 17 mesh<tp=2> {
// COLL: %s.reshard = partita.ShardSlice(%s) {axis = "tp", dim = 0} : f32[16] {S(tp)}
// COLL: %y = Add(%h, %s.reshard) : f32[4,16] {R,S(tp)}
// COLL: %out.reshard = Identity(%y) : f32[4,16] {R,S(tp)}
// COLL: %out = partita.AllGather(%out.reshard) {axis = "tp", dim = 1} : f32[4,16] {R,R}
// COLL: return %out
graph @gather_out(%x: f32[4,8]) opset 17 mesh<tp=2> {
  %w = Weight() {name = "w"} : f32[8,16] {R,S(tp)}
  %s = Weight() {name = "s"} : f32[16]
  %h = MatMul(%x, %w) : f32[4,16]
  %y = Add(%h, %s) : f32[4,16]
  %out = Identity(%y) : f32[4,16]
  return %out
}

// -----
// A partial sum meeting a split residual is reduce-scattered (sequence-parallel style).
// COLL-LABEL: graph @scatter(%x: f32[4,8] {R,R}, %r: f32[4,8] {S(tp),R}) opset 17 mesh<tp=2> {
// COLL: %p.reshard = partita.ReduceScatter(%p) {axis = "tp", dim = 0} : f32[4,8] {S(tp),R}
// COLL: %y.reshard = Add(%r, %p.reshard) : f32[4,8] {S(tp),R}
// COLL: %y = partita.AllGather(%y.reshard) {axis = "tp", dim = 0} : f32[4,8] {R,R}
graph @scatter(%x: f32[4,8], %r: f32[4,8] {S(tp),R}) opset 17 mesh<tp=2> {
  %w1 = Weight() {name = "w1"} : f32[8,16] {R,S(tp)}
  %w2 = Weight() {name = "w2"} : f32[16,8] {S(tp),R}
  %h = MatMul(%x, %w1) : f32[4,16]
  %p = MatMul(%h, %w2) : f32[4,8]
  %y = Add(%r, %p) : f32[4,8]
  return %y
}
