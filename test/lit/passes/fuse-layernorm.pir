// RUN: partita-opt %s --split-input-file --passes=fuse-layernorm,dce | FileCheck %s

// torch's opset-14 LayerNorm: the whole chain becomes one op, opset raised to 17.
// CHECK-LABEL: graph @ln(%x: f32[2,8,32]) opset 17 {
// CHECK: %out = LayerNormalization(%x, %g, %b) {axis = 2, epsilon = 9.99999975e-06} : f32[2,8,32]
// CHECK-NEXT: return %out
graph @ln(%x: f32[2,8,32]) opset 14 {
  %g = Weight() {name = "g"} : f32[32]
  %b = Weight() {name = "b"} : f32[32]
  %m = ReduceMean(%x) {axes = [-1]} : f32[2,8,1]
  %d = Sub(%x, %m) : f32[2,8,32]
  %two = Constant() {value = dense<f32[]>[2.0]} : f32[]
  %p = Pow(%d, %two) : f32[2,8,32]
  %v = ReduceMean(%p) {axes = [-1]} : f32[2,8,1]
  %eps = Constant() {value = dense<f32[]>[9.99999975e-06]} : f32[]
  %ve = Add(%v, %eps) : f32[2,8,1]
  %s = Sqrt(%ve) : f32[2,8,1]
  %n = Div(%d, %s) : f32[2,8,32]
  %sc = Mul(%n, %g) : f32[2,8,32]
  %out = Add(%sc, %b) : f32[2,8,32]
  return %out
}

// -----
// Without affine parameters, over two trailing axes, variance as d*d: a ones scale is made.
// CHECK-LABEL: graph @ln_plain(%x: f32[2,4,8]) opset 17 {
// CHECK: %x.ln_scale = Constant() {value = dense<f32[4,8]>[1.0,
// CHECK: %n = LayerNormalization(%x, %x.ln_scale) {axis = 1, epsilon = 0.00100000005} : f32[2,4,8]
graph @ln_plain(%x: f32[2,4,8]) opset 17 {
  %m = ReduceMean(%x) {axes = [1, 2]} : f32[2,1,1]
  %d = Sub(%x, %m) : f32[2,4,8]
  %p = Mul(%d, %d) : f32[2,4,8]
  %v = ReduceMean(%p) {axes = [1, 2]} : f32[2,1,1]
  %eps = Constant() {value = dense<f32[]>[0.001]} : f32[]
  %ve = Add(%eps, %v) : f32[2,1,1]
  %s = Sqrt(%ve) : f32[2,1,1]
  %n = Div(%d, %s) : f32[2,4,8]
  return %n
}

// -----
// Not a LayerNorm: reduced over a leading axis; mean taken of another tensor;
// the centred value escapes the pattern.
// CHECK-LABEL: graph @negative(%x: f32[4,8], %z: f32[4,8]) opset 17 {
// CHECK-NOT: LayerNormalization
graph @negative(%x: f32[4,8], %z: f32[4,8]) opset 17 {
  %m = ReduceMean(%x) {axes = [0]} : f32[1,8]
  %d = Sub(%x, %m) : f32[4,8]
  %p = Mul(%d, %d) : f32[4,8]
  %v = ReduceMean(%p) {axes = [0]} : f32[1,8]
  %eps = Constant() {value = dense<f32[]>[0.001]} : f32[]
  %s = Sqrt(%v) : f32[1,8]
  %n = Div(%d, %s) : f32[4,8]
  %m2 = ReduceMean(%z) {axes = [-1]} : f32[4,1]
  %d2 = Sub(%x, %m2) : f32[4,8]
  %p2 = Mul(%d2, %d2) : f32[4,8]
  %v2 = ReduceMean(%p2) {axes = [-1]} : f32[4,1]
  %ve2 = Add(%v2, %eps) : f32[4,1]
  %s2 = Sqrt(%ve2) : f32[4,1]
  %n2 = Div(%d2, %s2) : f32[4,8]
  %m3 = ReduceMean(%x) {axes = [-1]} : f32[4,1]
  %d3 = Sub(%x, %m3) : f32[4,8]
  %p3 = Mul(%d3, %d3) : f32[4,8]
  %v3 = ReduceMean(%p3) {axes = [-1]} : f32[4,1]
  %ve3 = Add(%v3, %eps) : f32[4,1]
  %s3 = Sqrt(%ve3) : f32[4,1]
  %n3 = Div(%d3, %s3) : f32[4,8]
  return %n, %n2, %n3, %d3
}
