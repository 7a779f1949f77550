// RUN: partita-opt %s --split-input-file --passes=classify-parameters | FileCheck %s

// A LLaMA-style attention: the rotary table multiplied into q and k and the
// additive mask before Softmax are frozen; projections, the embedding table
// and the norm scale are parameters; an integer table is frozen.
// CHECK-LABEL: graph @rope
// CHECK: %emb = Weight() {name = "embed", role = "embedding table (Gather data)", trainable = 1}
// CHECK: %g = Weight() {name = "norm.weight", role = "elementwise scale (Mul)", trainable = 1}
// CHECK: %wq = Weight() {name = "wq", role = "projection weight (MatMul)", trainable = 1}
// CHECK: %cos = Weight() {name = "onnx::Mul_438", role = "rotary table (Mul with the queries/keys)", trainable = 0}
// CHECK: %mask = Weight() {name = "onnx::Add_441", role = "additive attention mask (Add into the scores before Softmax)", trainable = 0}
// CHECK: %pids = Weight() {name = "position_ids", role = "integer or bool dtype (i64): no gradient", trainable = 0}
graph @rope(%ids: i64[2,4]) opset 17 {
  %emb = Weight() {name = "embed"} : f32[16,8]
  %e = Gather(%emb, %ids) : f32[2,4,8]
  %g = Weight() {name = "norm.weight"} : f32[8]
  %h = Mul(%e, %g) : f32[2,4,8]
  %wq = Weight() {name = "wq"} : f32[8,8]
  %wk = Weight() {name = "wk"} : f32[8,8]
  %q = MatMul(%h, %wq) : f32[2,4,8]
  %k = MatMul(%h, %wk) : f32[2,4,8]
  %cos = Weight() {name = "onnx::Mul_438"} : f32[4,8]
  %qr = Mul(%q, %cos) : f32[2,4,8]
  %kr = Mul(%k, %cos) : f32[2,4,8]
  %kt = Transpose(%kr) {perm = [0, 2, 1]} : f32[2,8,4]
  %s = MatMul(%qr, %kt) : f32[2,4,4]
  %mask = Weight() {name = "onnx::Add_441"} : f32[4,4]
  %sm = Add(%s, %mask) : f32[2,4,4]
  %p = Softmax(%sm) {axis = -1} : f32[2,4,4]
  %pids = Weight() {name = "position_ids"} : i64[1,4]
  %o = MatMul(%p, %qr) : f32[2,4,8]
  return %o, %pids
}

// -----
// ViT: the class token (concatenated) and the position embedding (added to
// the patch embeddings) are parameters; rotary frequencies through Cos are not.
// CHECK-LABEL: graph @vit
// CHECK: %cls = Weight() {name = "cls", role = "concatenated with activations (a learned token)", trainable = 1}
// CHECK: %pos = Weight() {name = "pos", role = "added to activations (Add: bias or learned embedding)", trainable = 1}
// CHECK: %inv = Weight() {name = "inv_freq", role = "rotary frequencies (reach Cos)", trainable = 0}
graph @vit(%x: f32[2,4,8], %t: i64[4,1]) opset 17 {
  %cls = Weight() {name = "cls"} : f32[2,1,8]
  %c = Concat(%cls, %x) {axis = 1} : f32[2,5,8]
  %pos = Weight() {name = "pos"} : f32[1,5,8]
  %y = Add(%c, %pos) : f32[2,5,8]
  %inv = Weight() {name = "inv_freq"} : f32[1,8]
  %tf = Cast(%t) {to = 1} : f32[4,1]
  %ang = MatMul(%tf, %inv) : f32[4,8]
  %cosv = Cos(%ang) : f32[4,8]
  return %y, %cosv
}

// -----
// GPT-2 as Hugging Face writes it: a bool causal mask buffer selects between
// the scores and the masked_bias fill value (both frozen).
// CHECK-LABEL: graph @buffers
// CHECK: %causal = Weight() {name = "h.0.attn.bias", role = "integer or bool dtype (bool): no gradient", trainable = 0}
// CHECK: %fill = Weight() {name = "h.0.attn.masked_bias", role = "additive attention mask (Where into the scores before Softmax)", trainable = 0}
graph @buffers(%s: f32[2,4,4]) opset 17 {
  %causal = Weight() {name = "h.0.attn.bias"} : bool[4,4]
  %fill = Weight() {name = "h.0.attn.masked_bias"} : f32[]
  %m = Where(%causal, %s, %fill) : f32[2,4,4]
  %p = Softmax(%m) {axis = -1} : f32[2,4,4]
  return %p
}
