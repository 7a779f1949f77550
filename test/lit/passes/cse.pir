// RUN: partita-opt %s --passes=cse,dce | FileCheck %s

// Identical constants and identical nodes merge; equal weights do not.
// CHECK-LABEL: graph @g(%x: f32[2,8]) opset 17 {
// CHECK-NEXT: %w1 = Weight() {name = "w1"} : f32[8]
// CHECK-NEXT: %w2 = Weight() {name = "w2"} : f32[8]
// CHECK-NEXT: %c1 = Constant() {value = dense<f32[]>[0.5]} : f32[]
// CHECK-NEXT: %m1 = Mul(%x, %c1) : f32[2,8]
// CHECK-NEXT: %s = Add(%m1, %m1) : f32[2,8]
// CHECK-NEXT: %a = Add(%s, %w1) : f32[2,8]
// CHECK-NEXT: %b = Add(%a, %w2) : f32[2,8]
// CHECK-NEXT: %c3 = Constant() {value = dense<f32[]>[0.25]} : f32[]
// CHECK-NEXT: %m3 = Mul(%b, %c3) : f32[2,8]
// CHECK-NEXT: return %m3
graph @g(%x: f32[2,8]) opset 17 {
  %w1 = Weight() {name = "w1"} : f32[8]
  %w2 = Weight() {name = "w2"} : f32[8]
  %c1 = Constant() {value = dense<f32[]>[0.5]} : f32[]
  %c2 = Constant() {value = dense<f32[]>[0.5]} : f32[]
  %m1 = Mul(%x, %c1) : f32[2,8]
  %m2 = Mul(%x, %c2) : f32[2,8]
  %s = Add(%m1, %m2) : f32[2,8]
  %a = Add(%s, %w1) : f32[2,8]
  %b = Add(%a, %w2) : f32[2,8]
  %c3 = Constant() {value = dense<f32[]>[0.25]} : f32[]
  %m3 = Mul(%b, %c3) : f32[2,8]
  return %m3
}
