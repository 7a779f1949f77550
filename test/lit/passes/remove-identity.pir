// RUN: partita-opt %s --split-input-file --passes=remove-identity,dce | FileCheck %s

// CHECK-LABEL: graph @chain(%x: f32[2,8]) opset 17 {
// CHECK-NEXT: %y = Relu(%x) : f32[2,8]
// CHECK-NEXT: return %y
graph @chain(%x: f32[2,8]) opset 17 {
  %a = Identity(%x) : f32[2,8]
  %b = Dropout(%a) : f32[2,8]
  %c = Cast(%b) {to = 1} : f32[2,8]
  %s = Constant() {value = dense<i64[2]>[2, 8]} : i64[2]
  %d = Reshape(%c, %s) : f32[2,8]
  %e = Expand(%d, %s) : f32[2,8]
  %y = Relu(%e) : f32[2,8]
  return %y
}

// -----
// Training-mode Dropout, a real Cast and a real Reshape stay.
// CHECK-LABEL: graph @keep(%x: f32[2,8]) opset 17 {
// CHECK: %d = Dropout(%x, %r, %t) : f32[2,8]
// CHECK: %c = Cast(%d) {to = 10} : f16[2,8]
// CHECK: %y = Reshape(%c, %s) : f16[16]
graph @keep(%x: f32[2,8]) opset 17 {
  %r = Constant() {value = dense<f32[]>[0.1]} : f32[]
  %t = Constant() {value = dense<bool[]>[1]} : bool[]
  %d = Dropout(%x, %r, %t) : f32[2,8]
  %c = Cast(%d) {to = 10} : f16[2,8]
  %s = Constant() {value = dense<i64[1]>[16]} : i64[1]
  %y = Reshape(%c, %s) : f16[16]
  return %y
}

// -----
// A training-mode Dropout of ratio 0 (an export with p = 0) drops nothing.
// CHECK-LABEL: graph @nodrop(%x: f32[2,8]) opset 17 {
// CHECK-NEXT: %y = Neg(%x) : f32[2,8]
graph @nodrop(%x: f32[2,8]) opset 17 {
  %r = Constant() {value = dense<f32[]>[0.0]} : f32[]
  %t = Constant() {value = dense<bool[]>[1]} : bool[]
  %d = Dropout(%x, %r, %t) : f32[2,8]
  %y = Neg(%d) : f32[2,8]
  return %y
}

// -----
// An Identity that produces a graph output: the output name survives.
// CHECK-LABEL: graph @out(%x: f32[4]) opset 17 {
// CHECK-NEXT: %logits = Neg(%x) : f32[4]
// CHECK-NEXT: return %logits
graph @out(%x: f32[4]) opset 17 {
  %n = Neg(%x) : f32[4]
  %logits = Identity(%n) : f32[4]
  return %logits
}

// -----
// Multiplying by one and adding zero are identities; a broadcasting one is not.
// CHECK-LABEL: graph @neutral(%x: f32[2,4]) opset 17 {
// CHECK-NEXT: %ones = Constant() {value = dense<f32[3,2,4]>
// CHECK-NEXT: %b = Mul(%x, %ones) : f32[3,2,4]
// CHECK-NEXT: %c = Neg(%x) : f32[2,4]
// (the unused constants are left to dce)
// CHECK-NEXT: return %b, %c
graph @neutral(%x: f32[2,4]) opset 17 {
  %one = Constant() {value = dense<f32[]>[1.0]} : f32[]
  %zero = Constant() {value = dense<f32[]>[0.0]} : f32[]
  %ones = Constant() {value = dense<f32[3,2,4]>[1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]} : f32[3,2,4]
  %a = Mul(%one, %x) : f32[2,4]
  %a2 = Add(%a, %zero) : f32[2,4]
  %b = Mul(%x, %ones) : f32[3,2,4]
  %a3 = Div(%a2, %one) : f32[2,4]
  %c = Neg(%a3) : f32[2,4]
  return %b, %c
}
