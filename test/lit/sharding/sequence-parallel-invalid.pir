// RUN: not partita-opt %s --passes='annotate-megatron{tp=2},propagate-sharding{sequence-parallel=1}' 2>&1 | FileCheck %s

// A sequence of 7 tokens (batch 1) does not split two ways: sequence
// parallelism is an error naming the reduced value, not silently dropped.
// CHECK: partita-opt: error: propagate-sharding: sequence-parallel: the sequence dimension 1 (size 7) of value %p (f32[1,7,16], reduced for '%y' (Add)) does not divide by tp=2, nor does any other token dimension; use a sequence length that is a multiple of 2 or drop sequence-parallel=1 (--sequence-parallel)
graph @block(%x: f32[1,7,16]) opset 17 {
  %g = Weight() {name = "g"} : f32[16]
  %w1 = Weight() {name = "w1"} : f32[16,64]
  %w2 = Weight() {name = "w2"} : f32[64,16]
  %n = LayerNormalization(%x, %g) {axis = -1} : f32[1,7,16]
  %h = MatMul(%n, %w1) : f32[1,7,64]
  %a = Relu(%h) : f32[1,7,64]
  %p = MatMul(%a, %w2) : f32[1,7,16]
  %y = Add(%x, %p) : f32[1,7,16]
  return %y
}
