// RUN: partita-opt %s --passes='annotate-megatron{tp=2},propagate-sharding,insert-collectives' | FileCheck %s

// LLaMA-style attention: 4 query heads, 2 key/value heads repeated to 4
// (Unsqueeze/Expand/Reshape), a rotary-style rotate-half (Slice/Neg/Concat and
// Mul by position tables) on the head dim. Heads and kv-heads split over tp=2;
// the only collective is the all-reduce after the output projection.
// CHECK-LABEL: graph @gqa(
// CHECK-DAG: %wq = Weight() {name = "wq"} : f32[8,8] {R,S(tp)}
// CHECK-DAG: %wk = Weight() {name = "wk"} : f32[8,4] {R,S(tp)}
// CHECK-DAG: %wv = Weight() {name = "wv"} : f32[8,4] {R,S(tp)}
// CHECK-DAG: %wo = Weight() {name = "wo"} : f32[8,8] {S(tp),R}
// CHECK: %kr = Reshape(%ke, %kvr) : f32[1,4,3,2] {R,S(tp),R,R}
// CHECK: %rot = Concat(%nhi, %lo) {axis = 3} : f32[1,4,3,2] {R,S(tp),R,R}
// CHECK: partita.AllReduce
// CHECK-NOT: partita.All
graph @gqa(%x: f32[1,3,8]) opset 17 {
  %wq = Weight() {name = "wq"} : f32[8,8]
  %wk = Weight() {name = "wk"} : f32[8,4]
  %wv = Weight() {name = "wv"} : f32[8,4]
  %wo = Weight() {name = "wo"} : f32[8,8]
  %cos = Constant() {value = dense<f32[3,2]>[1.0, 0.5, 0.25, 1.0, 0.5, 0.25]} : f32[3,2]
  %q = MatMul(%x, %wq) : f32[1,3,8]
  %k = MatMul(%x, %wk) : f32[1,3,4]
  %v = MatMul(%x, %wv) : f32[1,3,4]
  %qs = Constant() {value = dense<i64[4]>[1, 3, 4, 2]} : i64[4]
  %ks = Constant() {value = dense<i64[4]>[1, 3, 2, 2]} : i64[4]
  %q4 = Reshape(%q, %qs) : f32[1,3,4,2]
  %k4 = Reshape(%k, %ks) : f32[1,3,2,2]
  %v4 = Reshape(%v, %ks) : f32[1,3,2,2]
  %qt = Transpose(%q4) {perm = [0, 2, 1, 3]} : f32[1,4,3,2]
  %kt = Transpose(%k4) {perm = [0, 2, 1, 3]} : f32[1,2,3,2]
  %vt = Transpose(%v4) {perm = [0, 2, 1, 3]} : f32[1,2,3,2]
  %a2 = Constant() {value = dense<i64[1]>[2]} : i64[1]
  %ku = Unsqueeze(%kt, %a2) : f32[1,2,1,3,2]
  %vu = Unsqueeze(%vt, %a2) : f32[1,2,1,3,2]
  %es = Constant() {value = dense<i64[5]>[1, 2, 2, 3, 2]} : i64[5]
  %ke = Expand(%ku, %es) : f32[1,2,2,3,2]
  %ve = Expand(%vu, %es) : f32[1,2,2,3,2]
  %kvr = Constant() {value = dense<i64[4]>[1, 4, 3, 2]} : i64[4]
  %kr = Reshape(%ke, %kvr) : f32[1,4,3,2]
  %vr = Reshape(%ve, %kvr) : f32[1,4,3,2]
  %s0 = Constant() {value = dense<i64[1]>[0]} : i64[1]
  %s1 = Constant() {value = dense<i64[1]>[1]} : i64[1]
  %s2 = Constant() {value = dense<i64[1]>[2]} : i64[1]
  %ax = Constant() {value = dense<i64[1]>[3]} : i64[1]
  %lo = Slice(%qt, %s0, %s1, %ax) : f32[1,4,3,1]
  %hi = Slice(%qt, %s1, %s2, %ax) : f32[1,4,3,1]
  %nhi = Neg(%hi) : f32[1,4,3,1]
  %rot = Concat(%nhi, %lo) {axis = 3} : f32[1,4,3,2]
  %qc = Mul(%qt, %cos) : f32[1,4,3,2]
  %qr = Add(%qc, %rot) : f32[1,4,3,2]
  %kT = Transpose(%kr) {perm = [0, 1, 3, 2]} : f32[1,4,2,3]
  %sc = MatMul(%qr, %kT) : f32[1,4,3,3]
  %p = Softmax(%sc) {axis = -1} : f32[1,4,3,3]
  %o = MatMul(%p, %vr) : f32[1,4,3,2]
  %ot = Transpose(%o) {perm = [0, 2, 1, 3]} : f32[1,3,4,2]
  %ms = Constant() {value = dense<i64[3]>[1, 3, 8]} : i64[3]
  %m = Reshape(%ot, %ms) : f32[1,3,8]
  %y = MatMul(%m, %wo) : f32[1,3,8]
  return %y
}
