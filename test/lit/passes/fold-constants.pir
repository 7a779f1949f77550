// RUN: partita-opt %s --split-input-file --passes=fold-constants,dce | FileCheck %s

// Shape computations fold to literals; the data path stays.
// CHECK-LABEL: graph @shape_chain(%x: f32[2,16,32]) opset 17 {
// CHECK-NEXT: %shape = Constant() {value = dense<i64[4]>[2, 16, 4, 8]} : i64[4]
// CHECK-NEXT: %y = Reshape(%x, %shape) : f32[2,16,4,8]
// CHECK-NEXT: return %y
graph @shape_chain(%x: f32[2,16,32]) opset 17 {
  %s = Shape(%x) : i64[3]
  %i0 = Constant() {value = dense<i64[1]>[0]} : i64[1]
  %i1 = Constant() {value = dense<i64[1]>[1]} : i64[1]
  %b = Gather(%s, %i0) {axis = 0} : i64[1]
  %t = Gather(%s, %i1) {axis = 0} : i64[1]
  %h = Constant() {value = dense<i64[1]>[4]} : i64[1]
  %d = Constant() {value = dense<i64[1]>[8]} : i64[1]
  %shape = Concat(%b, %t, %h, %d) {axis = 0} : i64[4]
  %y = Reshape(%x, %shape) : f32[2,16,4,8]
  return %y
}

// -----
// Float arithmetic on constants folds (1/sqrt(8)); weights are never read.
// CHECK-LABEL: graph @scale(%x: f32[4,8]) opset 17 {
// CHECK-NEXT: %w = Weight() {name = "w"} : f32[8]
// CHECK-NEXT: %n = Neg(%w) : f32[8]
// CHECK-NEXT: %r = Constant() {value = dense<f32[]>[0.353553385]} : f32[]
// CHECK-NEXT: %y = Mul(%x, %r) : f32[4,8]
graph @scale(%x: f32[4,8]) opset 17 {
  %w = Weight() {name = "w"} : f32[8]
  %n = Neg(%w) : f32[8]
  %c = Constant() {value = dense<f32[]>[8.0]} : f32[]
  %s = Sqrt(%c) : f32[]
  %r = Reciprocal(%s) : f32[]
  %y = Mul(%x, %r) : f32[4,8]
  %z = Add(%y, %n) : f32[4,8]
  return %z
}

// -----
// A causal mask built from Range/Unsqueeze/LessOrEqual folds; above max-elements it would not.
// CHECK-LABEL: graph @mask() opset 17 {
// CHECK-NEXT: %m = Constant() {value = dense<bool[3,3]>[1, 0, 0, 1, 1, 0, 1, 1, 1]} : bool[3,3]
graph @mask() opset 17 {
  %z = Constant() {value = dense<i64[]>[0]} : i64[]
  %n = Constant() {value = dense<i64[]>[3]} : i64[]
  %o = Constant() {value = dense<i64[]>[1]} : i64[]
  %r = Range(%z, %n, %o) : i64[3]
  %a0 = Constant() {value = dense<i64[1]>[0]} : i64[1]
  %a1 = Constant() {value = dense<i64[1]>[1]} : i64[1]
  %row = Unsqueeze(%r, %a1) : i64[3,1]
  %col = Unsqueeze(%r, %a0) : i64[1,3]
  %m = LessOrEqual(%col, %row) : bool[3,3]
  return %m
}

// -----
// The graph output keeps its name when its producer folds.
// CHECK-LABEL: graph @out_name(%x: f32[5,7]) opset 17 {
// CHECK-NEXT: %size = Constant() {value = dense<i64[]>[35]} : i64[]
// CHECK-NEXT: return %size
graph @out_name(%x: f32[5,7]) opset 17 {
  %size = Size(%x) : i64[]
  return %size
}

// -----
// Slices and transposes of weights become views: no bytes are read.
// CHECK-LABEL: graph @weight_views(%x: f32[2,4]) opset 17 {
// CHECK-NEXT: %"w[2:6,0:4]" = Weight() {name = "w[2:6,0:4]"} : f32[4,4]
// CHECK-NEXT: %a = MatMul(%x, %"w[2:6,0:4]") : f32[2,4]
// CHECK-NEXT: %"w.T[1,0]" = Weight() {name = "w.T[1,0]"} : f32[4,6]
// CHECK-NEXT: %b = MatMul(%x, %"w.T[1,0]") : f32[2,6]
graph @weight_views(%x: f32[2,4]) opset 17 {
  %w = Weight() {name = "w"} : f32[6,4]
  %s = Constant() {value = dense<i64[1]>[2]} : i64[1]
  %e = Constant() {value = dense<i64[1]>[6]} : i64[1]
  %ws = Slice(%w, %s, %e) : f32[4,4]
  %wt = Transpose(%w) {perm = [1, 0]} : f32[4,6]
  %a = MatMul(%x, %ws) : f32[2,4]
  %b = MatMul(%x, %wt) : f32[2,6]
  return %a, %b
}
