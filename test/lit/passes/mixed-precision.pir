// RUN: partita-opt %s --split-input-file --passes='mixed-precision{dtype=bf16}' | FileCheck %s
// RUN: partita-opt %S/Inputs/mixed-precision-loss.pir --passes='mixed-precision{dtype=fp16},autodiff{loss-scale=1}' | FileCheck %s --check-prefix=GRAD
// RUN: partita-opt %S/Inputs/mixed-precision-loss.pir --passes='mixed-precision{dtype=bf16},autodiff,save-half-activations' | FileCheck %s --check-prefix=SAVE
// RUN: not partita-opt %s --split-input-file --passes='mixed-precision{dtype=fp8}' 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not partita-opt %s --split-input-file --passes='mixed-precision' 2>&1 | FileCheck %s --check-prefix=NODTYPE

// Every float32 value a node computes, and a float32 input, is read through a
// round trip to bf16; weights, what is made from weights only (the transpose),
// and a move of rounded values (the Reshape) are not rounded again.
// CHECK-LABEL: graph @mlp(%x: f32[2,8], %ids: i64[2]) opset 17 {
// CHECK: %wt = Transpose(%w) {perm = [1, 0]} : f32[8,8]
// CHECK: %g = Gather(%e, %ids) : f32[2,8]
// CHECK: %[[XH:.*]] = Cast(%x) {to = 16} : bf16[2,8]
// CHECK: %[[XR:.*]] = Cast(%[[XH]]) {to = 1} : f32[2,8]
// CHECK: %[[GH:.*]] = Cast(%g) {to = 16} : bf16[2,8]
// CHECK: %[[GR:.*]] = Cast(%[[GH]]) {to = 1} : f32[2,8]
// CHECK: %a = Add(%[[XR]], %[[GR]]) : f32[2,8]
// CHECK: %[[AH:.*]] = Cast(%a) {to = 16} : bf16[2,8]
// CHECK: %[[AR:.*]] = Cast(%[[AH]]) {to = 1} : f32[2,8]
// CHECK: %h = MatMul(%[[AR]], %wt) : f32[2,8]
// CHECK: %[[HH:.*]] = Cast(%h) {to = 16} : bf16[2,8]
// CHECK: %[[HR:.*]] = Cast(%[[HH]]) {to = 1} : f32[2,8]
// CHECK: %r = Reshape(%[[HR]], %s) : f32[16]
// CHECK-NEXT: %[[Y:.*]] = Relu(%r) : f32[16]
// CHECK-NEXT: %[[YH:.*]] = Cast(%[[Y]]) {to = 16} : bf16[16]
// CHECK-NEXT: %y = Cast(%[[YH]]) {to = 1} : f32[16]
// CHECK-NEXT: return %y
// BAD: mixed-precision: option dtype expects one of bf16, fp16, got 'fp8'
// NODTYPE: mixed-precision: option dtype (bf16 or fp16) is required
graph @mlp(%x: f32[2,8], %ids: i64[2]) opset 17 {
  %w = Weight() {name = "fc.w"} : f32[8,8]
  %e = Weight() {name = "emb"} : f32[4,8]
  %wt = Transpose(%w) {perm = [1, 0]} : f32[8,8]
  %g = Gather(%e, %ids) : f32[2,8]
  %a = Add(%x, %g) : f32[2,8]
  %h = MatMul(%a, %wt) : f32[2,8]
  %s = Constant() {value = dense<i64[1]>[16]} : i64[1]
  %r = Reshape(%h, %s) : f32[16]
  %y = Relu(%r) : f32[16]
  return %y
}

// Differentiated, the casts round every gradient too, and the backward starts
// from the loss_scale input (fp16's loss scaling) instead of 1.
// GRAD-LABEL: graph @loss(%x: f32[2,8], %loss_scale: f32[]) opset 17 {
// GRAD: %[[S:.*]] = Cast(%loss_scale) {program = "backward", to = 10} : f16[]
// GRAD: %[[DH:.*]] = Expand({{.*}}) {program = "backward"} : f32[2,4]
// GRAD-NEXT: %[[DHH:.*]] = Cast(%[[DH]]) {program = "backward", to = 10} : f16[2,4]
// GRAD-NEXT: %[[DHR:.*]] = Cast(%[[DHH]]) {program = "backward", to = 1} : f32[2,4]
// GRAD: MatMul({{.*}}, %[[DHR]]) {program = "backward"} : f32[8,4]

// save-half-activations: the weight gradient's product reads the input as the
// backward's own widening of the bf16 value, so the forward saves bf16.
// SAVE: %[[XH:.*]] = Cast(%x) {to = 16} : bf16[2,8]
// SAVE: %[[W:.*]] = Cast(%[[XH]]) {program = "backward", to = 1} : f32[2,8]
// SAVE-NEXT: %[[T:.*]] = Transpose(%[[W]]) {perm = [1, 0], program = "backward"} : f32[8,2]
// SAVE-NEXT: MatMul(%[[T]], {{.*}}) {program = "backward"} : f32[8,4]
