// RUN: not partita-opt %s --split-input-file --passes=copy-shared-weights,autodiff,add-optimizer 2>&1 | FileCheck %s

// A table read on stages 0 and 2 (a lookup and a tied head): stage 2 reads a
// copy of its own with the same bytes, gets its own gradient and update, and
// only the table's squares enter the gradient norm. Stage 1's reader of the
// other weight is alone: no copy.
// CHECK-LABEL: graph @tied
// CHECK-DAG: %emb = Weight() {name = "emb"
// CHECK-DAG: %emb.stage2 = Weight() {copy_of = "emb", name = "emb.stage2"
// CHECK-DAG: %h = Gather(%emb, %ids) {stage = 0}
// CHECK-DAG: Transpose(%emb.stage2) {perm = [1, 0], stage = 2}
// CHECK-DAG: AdamW({{.*}}%emb.stage2, %accumulated_grad.emb.stage2
// CHECK-DAG: Mul(%accumulated_grad.emb, %accumulated_grad.emb)
// CHECK-NOT: Mul(%accumulated_grad.emb.stage2
// CHECK: return {{.*}}%grad.emb,{{.*}}%grad.emb.stage2
graph @tied(%ids: i64[2]) opset 17 {
  %emb = Weight() {name = "emb", trainable = 1} : f32[8,4]
  %w = Weight() {name = "w", trainable = 1} : f32[4,4]
  %h = Gather(%emb, %ids) {stage = 0} : f32[2,4]
  %m = MatMul(%h, %w) {stage = 1} : f32[2,4]
  %t = Transpose(%emb) {perm = [1, 0], stage = 2} : f32[4,8]
  %logits = MatMul(%m, %t) {stage = 2} : f32[2,8]
  %loss = ReduceSum(%logits) {keepdims = 0, stage = 2} : f32[]
  return %loss
}

// -----

// A reader on no stage cannot tell which stage's copy it reads.
// CHECK: copy-shared-weights: trained weight %emb is read by node {{.*}}(Neg), which is on no pipeline stage
graph @unstaged(%ids: i64[2]) opset 17 {
  %emb = Weight() {name = "emb", trainable = 1} : f32[8,4]
  %n = Neg(%emb) : f32[8,4]
  %h = Gather(%n, %ids) {stage = 0} : f32[2,4]
  %t = Transpose(%emb) {perm = [1, 0], stage = 1} : f32[4,8]
  %logits = MatMul(%h, %t) {stage = 1} : f32[2,8]
  %loss = ReduceSum(%logits) {keepdims = 0, stage = 1} : f32[]
  return %loss
}
