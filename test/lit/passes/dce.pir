// RUN: partita-opt %s --passes=dce | FileCheck %s

// CHECK-LABEL: graph @g(%x: f32[4]) opset 17 {
// CHECK-NEXT: %a, %b = Split(%x) {axis = 0} : f32[2], f32[2]
// CHECK-NEXT: %y = Neg(%a) : f32[2]
// CHECK-NEXT: return %y
graph @g(%x: f32[4]) opset 17 {
  %w = Weight() {name = "unused"} : f32[4]
  %dead = Add(%x, %w) : f32[4]
  %dead2 = Relu(%dead) : f32[4]
  %a, %b = Split(%x) {axis = 0} : f32[2], f32[2]
  %y = Neg(%a) : f32[2]
  return %y
}
