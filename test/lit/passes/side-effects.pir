// RUN: partita-opt %s --split-input-file --passes=cse,dce | FileCheck %s

// A pipeline's receives are distinct messages however alike their
// attributes: cse keeps both (OpTrait::SideEffects), as it merges the two
// identical Negs.
// CHECK-LABEL: graph @recv
// CHECK-NEXT: %a = partita.Recv() {dtype = 1, peer = 0, shape = [4]} : f32[4]
// CHECK-NEXT: %b = partita.Recv() {dtype = 1, peer = 0, shape = [4]} : f32[4]
// CHECK-NEXT: %na = Neg(%a)
// CHECK-NEXT: %nb = Neg(%b)
// CHECK-NEXT: %y = Add(%na, %nb)
// CHECK-NEXT: %z = Add(%na, %na)
// CHECK-NEXT: %s = Add(%y, %z)
// CHECK-NEXT: return %s
graph @recv() opset 17 {
  %a = partita.Recv() {dtype = 1, peer = 0, shape = [4]} : f32[4]
  %b = partita.Recv() {dtype = 1, peer = 0, shape = [4]} : f32[4]
  %na = Neg(%a) : f32[4]
  %nb = Neg(%b) : f32[4]
  %na2 = Neg(%a) : f32[4]
  %y = Add(%na, %nb) : f32[4]
  %z = Add(%na, %na2) : f32[4]
  %s = Add(%y, %z) : f32[4]
  return %s
}

// -----

// A send whose token nothing reads still runs: dce keeps it, and what it
// sends; an unread Neg goes.
// CHECK-LABEL: graph @send
// CHECK-NEXT: %h = Relu(%x)
// CHECK-NEXT: %t = partita.Send(%h) {peer = 1} : f32[0]
// CHECK-NEXT: return %x
graph @send(%x: f32[4]) opset 17 {
  %h = Relu(%x) : f32[4]
  %t = partita.Send(%h) {peer = 1} : f32[0]
  %dead = Neg(%x) : f32[4]
  return %x
}
