// RUN: partita-opt %s --split-input-file --passes='annotate-megatron{tp=2}' | FileCheck %s

// MLP: column-parallel fc (weight and bias split), row-parallel fc2 turned
// into MatMul + Add so the bias is added once, after the reduction.
// CHECK-LABEL: graph @mlp(%x: f32[4,8]) opset 17 mesh<tp=2> {
// CHECK: %w1 = Weight() {name = "w1"} : f32[8,32] {R,S(tp)}
// CHECK: %b1 = Weight() {name = "b1"} : f32[32] {S(tp)}
// CHECK: %w2 = Weight() {name = "w2"} : f32[32,8] {S(tp),R}
// CHECK: %b2 = Weight() {name = "b2"} : f32[8]
// CHECK: %h = partita.Linear(%x, %w1, %b1) : f32[4,32]
// CHECK: %y.matmul = MatMul(%g, %w2) : f32[4,8]
// CHECK: %y = Add(%y.matmul, %b2) : f32[4,8]
graph @mlp(%x: f32[4,8]) opset 17 {
  %w1 = Weight() {name = "w1"} : f32[8,32]
  %b1 = Weight() {name = "b1"} : f32[32]
  %w2 = Weight() {name = "w2"} : f32[32,8]
  %b2 = Weight() {name = "b2"} : f32[8]
  %h = partita.Linear(%x, %w1, %b1) : f32[4,32]
  %g = partita.Gelu(%h) : f32[4,32]
  %y = partita.Linear(%g, %w2, %b2) : f32[4,8]
  return %y
}

// -----
// SwiGLU: both the gate and the up projection are column-parallel.
// CHECK-LABEL: graph @swiglu(%x: f32[4,8]) opset 17 mesh<tp=2> {
// CHECK: %wg = Weight() {name = "wg"} : f32[8,16] {R,S(tp)}
// CHECK: %wu = Weight() {name = "wu"} : f32[8,16] {R,S(tp)}
// CHECK: %wd = Weight() {name = "wd"} : f32[16,8] {S(tp),R}
graph @swiglu(%x: f32[4,8]) opset 17 {
  %wg = Weight() {name = "wg"} : f32[8,16]
  %wu = Weight() {name = "wu"} : f32[8,16]
  %wd = Weight() {name = "wd"} : f32[16,8]
  %g = MatMul(%x, %wg) : f32[4,16]
  %s = Sigmoid(%g) : f32[4,16]
  %silu = Mul(%g, %s) : f32[4,16]
  %u = MatMul(%x, %wu) : f32[4,16]
  %h = Mul(%silu, %u) : f32[4,16]
  %y = MatMul(%h, %wd) : f32[4,8]
  return %y
}

// -----
// Fused q/k/v split into three projections over views of the fused weight;
// heads split through Reshape/Transpose/MatMul/Softmax.
// CHECK-LABEL: graph @attention(%x: f32[1,4,8]) opset 17 mesh<tp=2> {
// CHECK-DAG: %"wqkv[0:8,0:8]" = Weight() {name = "wqkv[0:8,0:8]"} : f32[8,8] {R,S(tp)}
// CHECK-DAG: %"wqkv[0:8,8:16]" = Weight() {name = "wqkv[0:8,8:16]"} : f32[8,8] {R,S(tp)}
// CHECK-DAG: %"wqkv[0:8,16:24]" = Weight() {name = "wqkv[0:8,16:24]"} : f32[8,8] {R,S(tp)}
// CHECK-DAG: %"bqkv[16:24]" = Weight() {name = "bqkv[16:24]"} : f32[8] {S(tp)}
// CHECK-DAG: %wo = Weight() {name = "wo"} : f32[8,8] {S(tp),R}
// CHECK-NOT: Split
graph @attention(%x: f32[1,4,8]) opset 17 {
  %wqkv = Weight() {name = "wqkv"} : f32[8,24]
  %bqkv = Weight() {name = "bqkv"} : f32[24]
  %wo = Weight() {name = "wo"} : f32[8,8]
  %qkv = partita.Linear(%x, %wqkv, %bqkv) : f32[1,4,24]
  %q, %k, %v = Split(%qkv) {axis = 2, split = [8, 8, 8]} : f32[1,4,8], f32[1,4,8], f32[1,4,8]
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
// Token embedding and LM head are vocab-parallel.
// CHECK-LABEL: graph @lm(%ids: i64[2,4]) opset 17 mesh<tp=2> {
// CHECK: %emb = Weight() {name = "emb"} : f32[16,8] {S(tp),R}
// CHECK: %head = Weight() {name = "head"} : f32[8,16] {R,S(tp)}
graph @lm(%ids: i64[2,4]) opset 17 {
  %emb = Weight() {name = "emb"} : f32[16,8]
  %head = Weight() {name = "head"} : f32[8,16]
  %x = Gather(%emb, %ids) : f32[2,4,8]
  %logits = MatMul(%x, %head) : f32[2,4,16]
  return %logits
}
