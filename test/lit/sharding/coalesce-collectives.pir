// RUN: partita-opt %s --passes='coalesce-collectives{axis=dp,bucket-mb=0.0001}' | FileCheck %s
// RUN: partita-opt %s --passes='coalesce-collectives{axis=dp}' | FileCheck %s --check-prefix=ONE
// RUN: not partita-opt %s --passes='coalesce-collectives{bucket-mb=-1}' 2>&1 | FileCheck %s --check-prefix=BAD

// Gradients all-reduced over dp are grouped in production order into buckets
// of at most 100 bytes (a larger one alone), each placed where its last member
// is computed; the all-reduce a node reads (%n), the max and the tp one stay.
// CHECK-LABEL: graph @g(
// CHECK:      %a.p = Neg(%x) : f32[8]
// CHECK-NEXT: %b.p = Exp(%x) : f32[8]
// CHECK-NEXT: %a, %b = partita.AllReduce(%a.p, %b.p) {async = 1, axis = "dp"} : f32[8], f32[8]
// CHECK-NEXT: %c.p = Abs(%z) : f32[32]
// CHECK-NEXT: %c = partita.AllReduce(%c.p) {async = 1, axis = "dp"} : f32[32]
// CHECK-NEXT: %n = partita.AllReduce(%x) {axis = "dp"} : f32[8]
// CHECK-NEXT: %m = partita.AllReduce(%x) {axis = "dp", reduce = "max"} : f32[8]
// CHECK-NEXT: %t = partita.AllReduce(%x) {axis = "tp"} : f32[8]
// CHECK-NEXT: %y = Neg(%n) : f32[8]
// CHECK-NEXT: %d.p = Sqrt(%x) : f32[8]
// CHECK-NEXT: %d = partita.AllReduce(%d.p) {async = 1, axis = "dp"} : f32[8]
// CHECK-NEXT: return %a, %b, %c, %y, %m, %t, %d
// With 25 MB buckets every gradient is in one, placed after the last.
// ONE: %y = Neg(%n)
// ONE: %a, %b, %c, %d = partita.AllReduce(%a.p, %b.p, %c.p, %d.p) {async = 1, axis = "dp"}
// ONE-NEXT: return
// BAD: coalesce-collectives: option bucket-mb expects a number >= 0, got '-1'
graph @g(%x: f32[8], %z: f32[32]) opset 17 mesh<dp=2, tp=2> {
  %a.p = Neg(%x) : f32[8]
  %a = partita.AllReduce(%a.p) {axis = "dp"} : f32[8]
  %b.p = Exp(%x) : f32[8]
  %b = partita.AllReduce(%b.p) {axis = "dp"} : f32[8]
  %c.p = Abs(%z) : f32[32]
  %c = partita.AllReduce(%c.p) {axis = "dp"} : f32[32]
  %n = partita.AllReduce(%x) {axis = "dp"} : f32[8]
  %m = partita.AllReduce(%x) {axis = "dp", reduce = "max"} : f32[8]
  %t = partita.AllReduce(%x) {axis = "tp"} : f32[8]
  %y = Neg(%n) : f32[8]
  %d.p = Sqrt(%x) : f32[8]
  %d = partita.AllReduce(%d.p) {axis = "dp"} : f32[8]
  return %a, %b, %c, %y, %m, %t, %d
}
