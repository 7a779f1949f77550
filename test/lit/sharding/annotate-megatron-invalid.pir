// RUN: not partita-opt %s --split-input-file --passes='annotate-megatron{tp=4}' 2>&1 | FileCheck %s

// Two heads cannot be split four ways.
// CHECK: partita-opt: error: annotate-megatron: attention block at '%p' (Softmax) could not be sharded: 2 heads do not divide by tp=4 (and 3 more; --allow-replicated compiles it and lists them all under coverage); tp=1 or 2 would shard every block; pass allow-replicated=1 (--allow-replicated) to replicate it
graph @attention(%x: f32[1,4,8]) opset 17 {
  %wq = Weight() {name = "wq"} : f32[8,8]
  %wk = Weight() {name = "wk"} : f32[8,8]
  %wv = Weight() {name = "wv"} : f32[8,8]
  %wo = Weight() {name = "wo"} : f32[8,8]
  %q = MatMul(%x, %wq) : f32[1,4,8]
  %k = MatMul(%x, %wk) : f32[1,4,8]
  %v = MatMul(%x, %wv) : f32[1,4,8]
  %hs = Constant() {value = dense<i64[4]>[1, 4, 2, 4]} : i64[4]
  %q4 = Reshape(%q, %hs) : f32[1,4,2,4]
  %k4 = Reshape(%k, %hs) : f32[1,4,2,4]
  %v4 = Reshape(%v, %hs) : f32[1,4,2,4]
  %qt = Transpose(%q4) {perm = [0, 2, 1, 3]} : f32[1,2,4,4]
  %kt = Transpose(%k4) {perm = [0, 2, 3, 1]} : f32[1,2,4,4]
  %vt = Transpose(%v4) {perm = [0, 2, 1, 3]} : f32[1,2,4,4]
  %s = MatMul(%qt, %kt) : f32[1,2,4,4]
  %p = Softmax(%s) {axis = -1} : f32[1,2,4,4]
  %o = MatMul(%p, %vt) : f32[1,2,4,4]
  %ot = Transpose(%o) {perm = [0, 2, 1, 3]} : f32[1,4,2,4]
  %ms = Constant() {value = dense<i64[3]>[1, 4, 8]} : i64[3]
  %m = Reshape(%ot, %ms) : f32[1,4,8]
  %y = MatMul(%m, %wo) : f32[1,4,8]
  return %y
}

// -----
// A vocabulary of 30 does not split four ways: padding is offered.
// CHECK: partita-opt: error: annotate-megatron: embedding '%x' (Gather): vocabulary 30 is not divisible by tp=4; pad the vocabulary to a multiple of 4 (as Megatron's --make-vocab-size-divisible-by does); tp=1, 2, 3, 5 or 6 would shard every block; pass allow-replicated=1 (--allow-replicated) to replicate it
graph @lm(%ids: i64[2,4]) opset 17 {
  %emb = Weight() {name = "emb"} : f32[30,8]
  %x = Gather(%emb, %ids) : f32[2,4,8]
  return %x
}

// -----
// An MLP whose hidden size (6) does not split four ways.
// CHECK: partita-opt: error: annotate-megatron: projection '%h' (MatMul) could not be sharded: its 6 output features do not divide by tp=4; tp=1, 2, 3 or 6 would shard every block; pass allow-replicated=1 (--allow-replicated) to replicate it
graph @mlp(%x: f32[4,8]) opset 17 {
  %w1 = Weight() {name = "w1"} : f32[8,6]
  %w2 = Weight() {name = "w2"} : f32[6,8]
  %h = MatMul(%x, %w1) : f32[4,6]
  %g = Relu(%h) : f32[4,6]
  %y = MatMul(%g, %w2) : f32[4,8]
  return %y
}

// -----

// One head divides by no tp > 1: the message gives the single head as the
// reason (v and the output projection could split the head's features; q and
// k could not) and says which sizes were tried.
// CHECK: partita-opt: error: annotate-megatron: projection '%q' (MatMul) could not be sharded: it feeds the attention scores at '%p' (Softmax), whose 1 head(s) do not divide by tp=4 (and 1 more; --allow-replicated compiles it and lists them all under coverage); of tp=1..8 only tp=1 shards every block; pass allow-replicated=1 (--allow-replicated) to replicate it
graph @one_head(%x: f32[1,4,8]) opset 17 {
  %wq = Weight() {name = "wq"} : f32[8,8]
  %wk = Weight() {name = "wk"} : f32[8,8]
  %wv = Weight() {name = "wv"} : f32[8,8]
  %wo = Weight() {name = "wo"} : f32[8,8]
  %q = MatMul(%x, %wq) : f32[1,4,8]
  %k = MatMul(%x, %wk) : f32[1,4,8]
  %v = MatMul(%x, %wv) : f32[1,4,8]
  %hs = Constant() {value = dense<i64[4]>[1, 4, 1, 8]} : i64[4]
  %q4 = Reshape(%q, %hs) : f32[1,4,1,8]
  %k4 = Reshape(%k, %hs) : f32[1,4,1,8]
  %v4 = Reshape(%v, %hs) : f32[1,4,1,8]
  %qt = Transpose(%q4) {perm = [0, 2, 1, 3]} : f32[1,1,4,8]
  %kt = Transpose(%k4) {perm = [0, 2, 3, 1]} : f32[1,1,8,4]
  %vt = Transpose(%v4) {perm = [0, 2, 1, 3]} : f32[1,1,4,8]
  %s = MatMul(%qt, %kt) : f32[1,1,4,4]
  %p = Softmax(%s) {axis = -1} : f32[1,1,4,4]
  %o = MatMul(%p, %vt) : f32[1,1,4,8]
  %ot = Transpose(%o) {perm = [0, 2, 1, 3]} : f32[1,4,1,8]
  %ms = Constant() {value = dense<i64[3]>[1, 4, 8]} : i64[3]
  %m = Reshape(%ot, %ms) : f32[1,4,8]
  %y = MatMul(%m, %wo) : f32[1,4,8]
  return %y
}
