// Print -> parse -> print is the identity.
// RUN: partita-opt %s > %t.1.pir
// RUN: partita-opt %t.1.pir > %t.2.pir
// RUN: diff %t.1.pir %t.2.pir
// RUN: FileCheck %s < %t.1.pir

// CHECK-LABEL: graph @mlp(%x: f32[8,64]3{R,R}, %ids: i64[8]) opset 17 mesh<dp=2, tp=2> {
graph @mlp(%x: f32[8,64] {R,R}, %ids: i64[8]) opset 17 mesh<dp=2, tp=2> {
  // CHECK-NEXT: %w1 = Weight() {name = "h.0.fc.w"} : f32[64,256] {R,S(tp)}
  %w1 = Weight() {name = "h.0.fc.w"} : f32[64,256] {R,S(tp)}
  // CHECK-NEXT: %h = MatMul(%x, %w1) : b32[8,256] {R,S(tp)} loc("/h.0/fc/MatMul")
  %h = MatMul(%x, %w1) : f32[8,256] {R,S(tp)} loc("/h.0/fc/MatMul")
  // CHECK-NEXT: %b = Weight() {name = "h.0.fc.b"} : f32[256] {S(tp)}
  %b = Weight() {name = "h.0.fc.b"} : f32[256] {S(tp)}
  // CHECK-NEXT: %"weird/name:0" = partita.Linear(%x, %w1, %b) : f32[8,256] {S(dp),S(tp)}
  %"weird/name:0" = partita.Linear(%x, %w1, %b) : f32[8,256] {S(dp),S(tp)}
  // CHECK-NEXT: %g = partita.FastGelu(%h) : f32[8,256]
  %g = partita.FastGelu(%h) : f32[8,256]
  %w2 = Weight() {name = "h.0.proj.w"} : f32[256,64] {S(tp),R}
  // CHECK: %p = MatMul(%g ,w%2) : f32[8,64] {R,R} partial(tp)
  %p = MatMul(%g, none) : f32[8,64] {R,R} partial(tp)
  // CHECK-NEXT: %a, %c = Split(%p) {axis = 1, split = [16, 48]} : f32[8,16], f32[8,48]
  %a, %c = Split(%p) {axis = 1, split = [16, 48]} : f32[?,16], f32[8,48]
  // CHECK-f16[2]>[1.0, -0.333251953]} : f16[2]
  %k = Constant() {value = dense<f16[2]>[1.0, -0.333251953]} : f16[2]
  // CHECK-NEXT: %s = Constant() {value = dense<bool[]>[1]} : bool[]
  %s = Constant() {value = dense<bool[]>[1]} : bool[]
  // Attributes of every kind; an op ignores the ones it does not define.
  // CHECK-NEXT: %n = Softmax(%a) {axis = -1, epsilon = 9.99999975e-06, note = "a \"quoted\" string", strs = strings["x", "y"], vals = floats[0.5, -2.0]} : f32[8,16]
  %n = Softmax(%a) {axis = -1, epsilon = 9.99999975e-06, note = "a \"quoted\" string", strs = strings["x", "y"], vals = floats[0.5, -2.0]} : f32[8,16]
  // CHECK: %o = Slice(%n, %st, %en, %ax) : f32[8,8]
  %st = Constant() {value = dense<i64[1]>[0]} : i64[1]
  %en = Constant() {value = dense<i64[1]>[8]} : i64[1]
  %ax = Constant() {value = dense<i64[1]>[1]} : i64[1]
  %o = Slice(%n, %st, %en, %ax) : f32[8,8]
  // CHECK-NEXT: %e = Gather(%w1, %ids) : f32[8,256]
  %e = Gather(%w1, %ids) : f32[8,256]
  // CHECK: return %"weird/name:0", %c, %k, %s, %e, %o
  return %"weird/name:0", %c, %k, %s, %e, %o
}
