// RUN: partita-opt %s --split-input-file --passes=fuse-linear,dce | FileCheck %s

// CHECK-LABEL: graph @matmul_add(%x: f32[2,8,16]) opset 17 {
// CHECK: %y = partita.Linear(%x, %w, %b) : f32[2,8,32] loc("/fc/MatMul")
// CHECK-NEXT: return %y
graph @matmul_add(%x: f32[2,8,16]) opset 17 {
  %w = Weight() {name = "w"} : f32[16,32]
  %b = Weight() {name = "b"} : f32[32]
  %h = MatMul(%x, %w) : f32[2,8,32] loc("/fc/MatMul")
  %y = Add(%b, %h) : f32[2,8,32]
  return %y
}

// -----
// Gemm with transB: the weight is transposed by reference (no bytes move).
// CHECK-LABEL: graph @gemm(%x: f32[4,16]) opset 17 {
// CHECK: %w.T = Weight() {name = "w.T"} : f32[16,32]
// CHECK: %y = partita.Linear(%x, %w.T, %b) : f32[4,32]
graph @gemm(%x: f32[4,16]) opset 17 {
  %w = Weight() {name = "w"} : f32[32,16]
  %b = Weight() {name = "b"} : f32[32]
  %y = Gemm(%x, %w, %b) {alpha = 1.0, beta = 1.0, transB = 1} : f32[4,32]
  return %y
}

// -----
// Not a linear: the added tensor is not a [N] bias; the MatMul result has a
// second user; Gemm with alpha != 1.
// CHECK-LABEL: graph @negative(%x: f32[2,8,16], %r: f32[2,8,32]) opset 17 {
// CHECK: %y1 = Add(%h1, %r) : f32[2,8,32]
// CHECK: %y2 = Add(%h2, %b) : f32[2,8,32]
// CHECK: %y3 = Gemm(%x2, %w2, %b) {alpha = 2.0} : f32[4,32]
// CHECK-NOT: partita.Linear
graph @negative(%x: f32[2,8,16], %r: f32[2,8,32]) opset 17 {
  %w = Weight() {name = "w"} : f32[16,32]
  %b = Weight() {name = "b"} : f32[32]
  %h1 = MatMul(%x, %w) : f32[2,8,32]
  %y1 = Add(%h1, %r) : f32[2,8,32]
  %h2 = MatMul(%x, %w) : f32[2,8,32]
  %y2 = Add(%h2, %b) : f32[2,8,32]
  %z = Mul(%h2, %y2) : f32[2,8,32]
  %x2 = Constant() {value = dense<f32[4,16]>[1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]} : f32[4,16]
  %w2 = Weight() {name = "w2"} : f32[16,32]
  %y3 = Gemm(%x2, %w2, %b) {alpha = 2.0} : f32[4,32]
  return %y1, %z, %y3
}
