// RUN: not partita-opt %s --split-input-file 2>&1 | FileCheck %s

// CHECK: invalid.pir:[[@LINE+2]]:13: use of undefined value %nope
graph @g(%x: f32[2]) opset 17 {
  %y = Relu(%nope) : f32[2]
  return %y
}

// -----
// CHECK: invalid.pir:[[@LINE+2]]:3: value %x is defined twice
graph @g(%x: f32[2]) opset 17 {
  %x = Relu(%x) : f32[2]
  return %x
}

// -----
// CHECK: invalid.pir:[[@LINE+1]]:17: unknown element type 'f31'
graph @g(%x: f31[2]) opset 17 {
  return %x
}

// -----
// CHECK: error: verifier: node '%y' (Add, opset 17): shapes [2,3] and [4] do not broadcast
graph @g(%x: f32[2,3], %z: f32[4]) opset 17 {
  %y = Add(%x, %z) : f32[2,3]
  return %y
}

// -----
// CHECK: error: verifier: node '%y' (FancyOp, opset 17): operator is not supported by Partita
graph @g(%x: f32[2]) opset 17 {
  %y = FancyOp(%x) : f32[2]
  return %y
}

// -----
// CHECK: error: verifier: node '%y' (Relu): value %y: sharding {S(tp)} splits dimension 0 of size 3 into 2 parts, which does not divide
graph @g(%x: f32[3]) opset 17 mesh<tp=2> {
  %y = Relu(%x) : f32[3] {S(tp)}
  return %y
}

// -----
// CHECK: error: verifier: graph input: value %x: sharding {S(pp)} names axis 'pp' which is not in mesh<tp=2>
graph @g(%x: f32[4] {S(pp)}) opset 17 mesh<tp=2> {
  return %x
}

// -----
// CHECK: error: verifier: graph input: value %x is sharded but the graph has no mesh
graph @g(%x: f32[4] {S(tp)}) opset 17 {
  return %x
}

// -----
// CHECK: error: verifier: node '%y' (Reshape, opset 17): cannot reshape [2,3] (6 elements) to [4,2]
graph @g(%x: f32[2,3]) opset 17 {
  %s = Constant() {value = dense<i64[2]>[4, 2]} : i64[2]
  %y = Reshape(%x, %s) : f32[4,2]
  return %y
}

// -----
// CHECK: error: verifier: node '%y' (Relu, opset 17): expects 1 input, got 2
graph @g(%x: f32[2]) opset 17 {
  %y = Relu(%x, %x) : f32[2]
  return %y
}

// -----
// CHECK: invalid.pir:[[@LINE+2]]:47: tensor literal of type i64[3] has 2 elements, expected 3
graph @g() opset 17 {
  %c = Constant() {value = dense<i64[3]>[1, 2]} : i64[3]
  return %c
}

// -----
// CHECK: error: verifier: node '%y' (Reshape, opset 17): the target shape is not a compile-time constant; fix dynamic input dimensions with --input-shape
graph @g(%x: f32[2,3], %s: i64[2]) opset 17 {
  %y = Reshape(%x, %s) : f32[3,2]
  return %y
}
