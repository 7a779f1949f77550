// RUN: partita-opt %s --split-input-file --passes=fuse-gelu,dce | FileCheck %s

// nn.GELU() as torch exports it: x * (1 + erf(x / sqrt2)) * 0.5
// CHECK-LABEL: graph @erf(%x: f32[2,64]) opset 17 {
// CHECK-NEXT: %y = partita.Gelu(%x) : f32[2,64]
// CHECK-NEXT: return %y
graph @erf(%x: f32[2,64]) opset 17 {
  %c = Constant() {value = dense<f32[]>[1.41421354]} : f32[]
  %d = Div(%x, %c) : f32[2,64]
  %e = Erf(%d) : f32[2,64]
  %one = Constant() {value = dense<f32[]>[1.0]} : f32[]
  %a = Add(%e, %one) : f32[2,64]
  %m = Mul(%x, %a) : f32[2,64]
  %half = Constant() {value = dense<f32[]>[0.5]} : f32[]
  %y = Mul(%m, %half) : f32[2,64]
  return %y
}

// -----
// x * 0.7071 instead of x / 1.4142, and 0.5 * (1 + erf) * x.
// CHECK-LABEL: graph @erf_mul(%x: f32[8]) opset 17 {
// CHECK-NEXT: %y = partita.Gelu(%x) : f32[8]
graph @erf_mul(%x: f32[8]) opset 17 {
  %c = Constant() {value = dense<f32[]>[0.707106769]} : f32[]
  %d = Mul(%c, %x) : f32[8]
  %e = Erf(%d) : f32[8]
  %one = Constant() {value = dense<f32[]>[1.0]} : f32[]
  %a = Add(%one, %e) : f32[8]
  %half = Constant() {value = dense<f32[]>[0.5]} : f32[]
  %h = Mul(%half, %a) : f32[8]
  %y = Mul(%h, %x) : f32[8]
  return %y
}

// -----
// GPT-2's tanh GELU: 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))
// CHECK-LABEL: graph @tanh(%x: f32[4,16]) opset 17 {
// CHECK-NEXT: %y = partita.FastGelu(%x) : f32[4,16]
// CHECK-NEXT: return %y
graph @tanh(%x: f32[4,16]) opset 17 {
  %half = Constant() {value = dense<f32[]>[0.5]} : f32[]
  %hx = Mul(%x, %half) : f32[4,16]
  %three = Constant() {value = dense<f32[]>[3.0]} : f32[]
  %x3 = Pow(%x, %three) : f32[4,16]
  %k = Constant() {value = dense<f32[]>[0.044715]} : f32[]
  %kx3 = Mul(%k, %x3) : f32[4,16]
  %in = Add(%x, %kx3) : f32[4,16]
  %s = Constant() {value = dense<f32[]>[0.797884583]} : f32[]
  %u = Mul(%in, %s) : f32[4,16]
  %t = Tanh(%u) : f32[4,16]
  %one = Constant() {value = dense<f32[]>[1.0]} : f32[]
  %a = Add(%t, %one) : f32[4,16]
  %y = Mul(%hx, %a) : f32[4,16]
  return %y
}

// -----
// Wrong constants are not GELU: erf(x / 2), and 1 + tanh with 0.05 x^3.
// CHECK-LABEL: graph @negative(%x: f32[8]) opset 17 {
// CHECK-NOT: Gelu
graph @negative(%x: f32[8]) opset 17 {
  %c = Constant() {value = dense<f32[]>[2.0]} : f32[]
  %d = Div(%x, %c) : f32[8]
  %e = Erf(%d) : f32[8]
  %one = Constant() {value = dense<f32[]>[1.0]} : f32[]
  %a = Add(%e, %one) : f32[8]
  %m = Mul(%x, %a) : f32[8]
  %half = Constant() {value = dense<f32[]>[0.5]} : f32[]
  %y = Mul(%m, %half) : f32[8]
  %three = Constant() {value = dense<f32[]>[3.0]} : f32[]
  %x3 = Pow(%x, %three) : f32[8]
  %k = Constant() {value = dense<f32[]>[0.05]} : f32[]
  %kx3 = Mul(%k, %x3) : f32[8]
  %in = Add(%x, %kx3) : f32[8]
  %s = Constant() {value = dense<f32[]>[0.797884583]} : f32[]
  %u = Mul(%in, %s) : f32[8]
  %t = Tanh(%u) : f32[8]
  %a2 = Add(%t, %one) : f32[8]
  %m2 = Mul(%x, %a2) : f32[8]
  %y2 = Mul(%m2, %half) : f32[8]
  return %y, %y2
}
