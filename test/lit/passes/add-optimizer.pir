// RUN: partita-opt %s --passes='add-optimizer{beta1=0.8,weight-decay=0.1},propagate-sharding{sharded-outputs=1},insert-collectives' | FileCheck %s
// RUN: not partita-opt %s --passes='add-optimizer{beta1=1}' 2>&1 | FileCheck %s --check-prefix=RANGE
// RUN: not partita-opt %s --passes='add-optimizer{eps=tiny}' 2>&1 | FileCheck %s --check-prefix=OPT
// RUN: not partita-opt %S/Inputs/add-optimizer-nograd.pir --passes=add-optimizer 2>&1 | FileCheck %s --check-prefix=NOGRAD
// RUN: not partita-opt %S/Inputs/add-optimizer-clash.pir --passes=add-optimizer 2>&1 | FileCheck %s --check-prefix=CLASH

// AdamW on a tp=2 mesh: the accumulated gradients and moments are inputs laid
// out as their weights (column-, row-parallel, replicated); each update keeps
// its weight's layout (every rank updates its shard, no communication); the
// squares of the two split gradients are summed locally into one partial sum,
// so the norm costs a single all-reduce over tp, and the replicated one's
// square sum is added after it.
// CHECK-LABEL: graph @g(%x: f32[8,8] {R,R}, %lr: f32[] {}, %bias_correction1: f32[] {}, %bias_correction2: f32[] {}, %grad_scale: f32[] {},
// CHECK-SAME: %accumulated_grad.w1: f32[8,8] {R,S(tp)}, %adam_m.w1: f32[8,8] {R,S(tp)}, %adam_v.w1: f32[8,8] {R,S(tp)},
// CHECK-SAME: %accumulated_grad.w2: f32[8,8] {S(tp),R}, %adam_m.w2: f32[8,8] {S(tp),R}, %adam_v.w2: f32[8,8] {S(tp),R},
// CHECK-SAME: %accumulated_grad.b: f32[8] {R}, %adam_m.b: f32[8] {R}, %adam_v.b: f32[8] {R})
// CHECK: %[[SQ1:.*]] = ReduceSum({{.*}}) {keepdims = 0, program = "grad_norm"} : f32[] {} partial(tp)
// CHECK-NEXT: %updated.w1, %updated.adam_m.w1, %updated.adam_v.w1 = partita.AdamW(%lr, %bias_correction1, %bias_correction2, %w1, %accumulated_grad.w1, %adam_m.w1, %adam_v.w1, %grad_scale)
// CHECK-SAME: {beta1 = 0.8, beta2 = 0.999, epsilon = 1e-08, program = "step", weight_decay = 0.1} : f32[8,8] {R,S(tp)}, f32[8,8] {R,S(tp)}, f32[8,8] {R,S(tp)}
// CHECK: %[[SQ2:.*]] = ReduceSum({{.*}}) {keepdims = 0, program = "grad_norm"} : f32[] {} partial(tp)
// CHECK-NEXT: %[[SPLIT:.*]] = Add(%[[SQ1]], %[[SQ2]]) {program = "grad_norm"} : f32[] {} partial(tp)
// CHECK: partita.AdamW({{.*}} %w2, {{.*}} : f32[8,8] {S(tp),R}, f32[8,8] {S(tp),R}, f32[8,8] {S(tp),R}
// CHECK: %[[SQB:.*]] = ReduceSum({{.*}}) {keepdims = 0, program = "grad_norm"} : f32[] {}{{$}}
// CHECK: partita.AdamW({{.*}} %b, {{.*}} : f32[8] {R}, f32[8] {R}, f32[8] {R}
// CHECK-NOT: AllReduce
// CHECK: %[[RED:.*]] = partita.AllReduce(%[[SPLIT]]) {axis = "tp"} : f32[] {}
// CHECK-NOT: AllReduce
// CHECK: %[[TOTAL:.*]] = Add(%[[SQB]], %[[RED]]) {program = "grad_norm"} : f32[] {}
// CHECK-NEXT: %grad_norm = Sqrt(%[[TOTAL]]) {program = "grad_norm"} : f32[] {}
// CHECK-NEXT: return %loss, %grad.w1, %grad.w2, %grad.b, %updated.w1, %updated.adam_m.w1, %updated.adam_v.w1, %updated.w2, {{.*}}, %updated.adam_v.b, %grad_norm
// RANGE: add-optimizer: AdamW needs betas in [0, 1), eps > 0 and weight-decay >= 0
// OPT: add-optimizer: option eps expects a number, got 'tiny'
// NOGRAD: add-optimizer: the graph has no gradient outputs (grad.<weight>): run autodiff first
// CLASH: add-optimizer: the graph already has a value named 'lr', a name the optimizer uses
graph @g(%x: f32[8,8]) opset 17 mesh<tp=2> {
  %w1 = Weight() {name = "w1"} : f32[8,8] {R,S(tp)}
  %w2 = Weight() {name = "w2"} : f32[8,8] {S(tp),R}
  %b = Weight() {name = "b"} : f32[8] {R}
  %loss = ReduceSum(%x) {keepdims = 0} : f32[]
  %grad.w1 = Mul(%x, %w1) : f32[8,8]
  %grad.w2 = Mul(%x, %w2) : f32[8,8]
  %grad.b = Add(%b, %b) : f32[8]
  return %loss, %grad.w1, %grad.w2, %grad.b
}
