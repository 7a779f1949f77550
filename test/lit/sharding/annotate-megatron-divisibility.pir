// RUN: not partita-opt %s --split-input-file --passes='annotate-megatron{tp=4}' 2>&1 | FileCheck %s --check-prefix=TP4
// RUN: not partita-opt %s --split-input-file --passes='annotate-megatron{tp=3}' 2>&1 | FileCheck %s --check-prefix=TP3

// What does not divide by tp is named, with the tp sizes (up to twice tp, at
// least 8) that would shard every block.

// An MLP with hidden size 30: tp=4 splits neither projection.
// TP4: partita-opt: error: annotate-megatron: projection '%h' (MatMul) could not be sharded: its 30 output features do not divide by tp=4 (and 1 more; --allow-replicated compiles it and lists them all under coverage); tp=1, 2, 3, 5 or 6 would shard every block; pass allow-replicated=1 (--allow-replicated) to replicate it
graph @mlp(%x: f32[4,8]) opset 17 {
  %w1 = Weight() {name = "w1"} : f32[8,30]
  %w2 = Weight() {name = "w2"} : f32[30,8]
  %h = MatMul(%x, %w1) : f32[4,30]
  %g = Relu(%h) : f32[4,30]
  %y = MatMul(%g, %w2) : f32[4,8]
  %z = Add(%y, %x) : f32[4,8]
  return %z
}

// -----
// Attention with d=32 and 4 heads of 8: tp=3 splits no head evenly.
// TP3: partita-opt: error: annotate-megatron: attention block at '%p' (Softmax) could not be sharded: 4 heads do not divide by tp=3 (and 4 more; --allow-replicated compiles it and lists them all under coverage); tp=1, 2 or 4 would shard every block; pass allow-replicated=1 (--allow-replicated) to replicate it
graph @attention(%x: f32[1,4,32]) opset 17 {
  %wq = Weight() {name = "wq"} : f32[32,32]
  %wk = Weight() {name = "wk"} : f32[32,32]
  %wv = Weight() {name = "wv"} : f32[32,32]
  %wo = Weight() {name = "wo"} : f32[32,32]
  %q = MatMul(%x, %wq) : f32[1,4,32]
  %k = MatMul(%x, %wk) : f32[1,4,32]
  %v = MatMul(%x, %wv) : f32[1,4,32]
  %hs = Constant() {value = dense<i64[4]>[1, 4, 4, 8]} : i64[4]
  %q4 = Reshape(%q, %hs) : f32[1,4,4,8]
  %k4 = Reshape(%k, %hs) : f32[1,4,4,8]
  %v4 = Reshape(%v, %hs) : f32[1,4,4,8]
  %qt = Transpose(%q4) {perm = [0, 2, 1, 3]} : f32[1,4,4,8]
  %kt = Transpose(%k4) {perm = [0, 2, 3, 1]} : f32[1,4,8,4]
  %vt = Transpose(%v4) {perm = [0, 2, 1, 3]} : f32[1,4,4,8]
  %s = MatMul(%qt, %kt) : f32[1,4,4,4]
  %p = Softmax(%s) {axis = -1} : f32[1,4,4,4]
  %o = MatMul(%p, %vt) : f32[1,4,4,8]
  %ot = Transpose(%o) {perm = [0, 2, 1, 3]} : f32[1,4,4,8]
  %ms = Constant() {value = dense<i64[3]>[1, 4, 32]} : i64[3]
  %m = Reshape(%ot, %ms) : f32[1,4,32]
  %y = MatMul(%m, %wo) : f32[1,4,32]
  %z = Add(%y, %x) : f32[1,4,32]
  return %z
}

