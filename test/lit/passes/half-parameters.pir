// RUN: partita-opt %s --passes='autodiff,add-optimizer,half-parameters{dtype=bf16}' | FileCheck %s
// RUN: partita-opt %S/zero-partition.pir --passes='add-optimizer,half-parameters{dtype=bf16},propagate-sharding{sharded-outputs=1},insert-collectives,data-parallel{axis=dp},zero-partition,insert-collectives,dce' | FileCheck %s --check-prefix=ZERO1
// RUN: partita-opt %S/zero-partition.pir --passes='add-optimizer,half-parameters{dtype=fp16},propagate-sharding{sharded-outputs=1},insert-collectives,data-parallel{axis=dp},zero-partition{stage=3},insert-collectives,dce' | FileCheck %s --check-prefix=ZERO3
// RUN: not partita-opt %s --passes='autodiff,add-optimizer,half-parameters{dtype=bf16},half-parameters{dtype=bf16}' 2>&1 | FileCheck %s --check-prefix=TWICE
// RUN: not partita-opt %s --passes='autodiff,half-parameters{dtype=bf16}' 2>&1 | FileCheck %s --check-prefix=NOADAM
// RUN: not partita-opt %s --passes='half-parameters{dtype=f8}' 2>&1 | FileCheck %s --check-prefix=BAD

// The trained weight is held in bf16 (its float32 bytes rounded at load);
// the forward and the backward each widen it for their own readers; AdamW
// updates a float32 weight of the same bytes, the master copy, whose
// rounding is the new parameter (both updated in place by the runtime).
// CHECK-LABEL: graph @loss(%x: f32[2,8]
// CHECK: %fc.w = Weight() {name = "fc.w"} : bf16[8,4]
// CHECK-NEXT: %fc.w.widened = Cast(%fc.w) {to = 1} : f32[8,4]
// CHECK-NEXT: %h = MatMul(%x, %fc.w.widened) : f32[2,4]
// CHECK: %fc.w.widened.backward = Cast(%fc.w) {program = "backward", to = 1} : f32[8,4]
// CHECK-NEXT: Transpose(%fc.w.widened.backward)
// CHECK: %master.fc.w = Weight() {name = "master.fc.w"} : f32[8,4]
// CHECK: %updated.master.fc.w, %updated.adam_m.fc.w, %updated.adam_v.fc.w = partita.AdamW(%lr, %bias_correction1, %bias_correction2, %master.fc.w, %accumulated_grad.fc.w,
// CHECK-NEXT: %updated.fc.w = Cast(%updated.master.fc.w) {program = "step", to = 16} : bf16[8,4]
// CHECK: return %l, %grad.fc.w, %updated.fc.w, %updated.adam_m.fc.w, %updated.adam_v.fc.w, %grad_norm, %updated.master.fc.w

// ZeRO-1 (zero-partition.pir's mesh<dp=2, tp=2>): the master is partitioned
// as the moments are, a weight of the rank's part of the flat buffer; the
// updated part is rounded before it is gathered, so the all-gather moves bf16.
// ZERO1: %w1 = Weight() {name = "w1"} : bf16[8,6] {R,S(tp)}
// ZERO1: %master.w1 = Weight() {name = "master.w1#zero1"} : f32[48] {S(tp,dp)}
// ZERO1-NEXT: %updated.master.w1, {{.*}} = partita.AdamW(%lr, %bias_correction1, %bias_correction2, %master.w1, %accumulated_grad.w1, {{.*}} : f32[48] {S(tp,dp)}, f32[48] {S(tp,dp)}, f32[48] {S(tp,dp)}
// ZERO1-NEXT: %[[R:.*]] = Cast(%updated.master.w1) {program = "step", to = 16} : bf16[48] {S(tp,dp)}
// ZERO1-NEXT: %[[G:.*]] = partita.AllGather(%[[R]]) {axis = "dp", dim = 0, program = "step"} : bf16[48] {S(tp)}
// ZERO1-NEXT: %updated.w1 = partita.UnflattenShards(%[[G]]) {{.*}} : bf16[8,6] {R,S(tp)}

// ZeRO-3: the half parameter and its master are both the rank's parts; the
// forward gathers fp16 and widens after; the step rounds in place.
// ZERO3: %w1 = Weight() {name = "w1#zero3"} : f16[48] {S(tp,dp)}
// ZERO3: %w1.gathered = partita.AllGather(%w1) {{.*}} : f16[48] {S(tp)}
// ZERO3: %w1.full = partita.UnflattenShards(%w1.gathered) {{.*}} : f16[8,6] {R,S(tp)}
// ZERO3-NEXT: %w1.widened = Cast(%w1.full) {to = 1} : f32[8,6] {R,S(tp)}
// ZERO3: %master.w1 = Weight() {name = "master.w1#zero3"} : f32[48] {S(tp,dp)}
// ZERO3: %updated.w1 = Cast(%updated.master.w1) {program = "step", to = 10} : f16[48] {S(tp,dp)}

// TWICE: half-parameters: node '%updated.master.fc.w' (partita.AdamW) already updates a master copy, %master.fc.w (run the pass once)
// NOADAM: half-parameters: the graph has no partita.AdamW node: run add-optimizer first
// BAD: half-parameters: option dtype expects one of bf16, fp16, got 'f8'
graph @loss(%x: f32[2,8]) opset 17 {
  %fc.w = Weight() {name = "fc.w"} : f32[8,4]
  %h = MatMul(%x, %fc.w) : f32[2,4]
  %l = ReduceSum(%h) {keepdims = 0} : f32[]
  return %l
}
