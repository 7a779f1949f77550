// RUN: partita-opt %s --passes='replicate-kv-heads{tp=4}' | FileCheck %s
// RUN: partita-opt %s --passes='replicate-kv-heads{tp=2}' | FileCheck %s --check-prefix=TP2

// Grouped-query attention, 4 query heads of size 2 and 2 kv heads repeated to
// them (LLaMA's repeat_kv), at tp 4: the kv projection's weight becomes a
// repeated view, one copy of each kv head per rank that reads it (4 heads),
// and the ops up to the repeat carry 4 heads; the query side is unchanged.
// CHECK: %wk.kv_copies2 = Weight() {kv_copies = 2, name = "wk.kv_copies2"} : f32[8,8]
// CHECK: %k = MatMul(%x, %wk.kv_copies2) : f32[1,3,8]
// CHECK: %k4 = Reshape(%k, %{{.*}}) : f32[1,3,4,2]
// CHECK: %kt = Transpose(%k4) {perm = [0, 2, 1, 3]} : f32[1,4,3,2]
// CHECK: %ku = Unsqueeze(%kt, %ax) : f32[1,4,1,3,2]
// CHECK: %ke = Expand(%ku, %{{.*}}) : f32[1,4,1,3,2]
// CHECK: %kr = Reshape(%ke, %rs) : f32[1,4,3,2]
// At tp 2 the kv heads split as they are: nothing changes.
// TP2: %k = MatMul(%x, %wk) : f32[1,3,4]
// TP2: %ke = Expand(%ku, %es) : f32[1,2,2,3,2]
graph @gqa(%x: f32[1,3,8]) opset 17 {
  %wq = Weight() {name = "wq"} : f32[8,8]
  %wk = Weight() {name = "wk"} : f32[8,4]
  %q = MatMul(%x, %wq) : f32[1,3,8]
  %qs = Constant() {value = dense<i64[4]>[1, 3, 4, 2]} : i64[4]
  %q4 = Reshape(%q, %qs) : f32[1,3,4,2]
  %qt = Transpose(%q4) {perm = [0, 2, 1, 3]} : f32[1,4,3,2]
  %k = MatMul(%x, %wk) : f32[1,3,4]
  %ks = Constant() {value = dense<i64[4]>[1, 3, 2, 2]} : i64[4]
  %k4 = Reshape(%k, %ks) : f32[1,3,2,2]
  %kt = Transpose(%k4) {perm = [0, 2, 1, 3]} : f32[1,2,3,2]
  %ax = Constant() {value = dense<i64[1]>[2]} : i64[1]
  %ku = Unsqueeze(%kt, %ax) : f32[1,2,1,3,2]
  %es = Constant() {value = dense<i64[5]>[1, 2, 2, 3, 2]} : i64[5]
  %ke = Expand(%ku, %es) : f32[1,2,2,3,2]
  %rs = Constant() {value = dense<i64[4]>[1, 4, 3, 2]} : i64[4]
  %kr = Reshape(%ke, %rs) : f32[1,4,3,2]
  %kT = Transpose(%kr) {perm = [0, 1, 3, 2]} : f32[1,4,2,3]
  %s = MatMul(%qt, %kT) : f32[1,4,3,3]
  return %s
}
