// max-elements bounds what is folded: a 3x3 mask stays computed at max-elements=4.
// RUN: partita-opt %s --passes='fold-constants{max-elements=4},dce' | FileCheck %s
// RUN: not partita-opt %s --passes='fold-constants{max-elements=x}' 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: partita-opt: error: fold-constants: option max-elements expects an integer >= 0, got 'x'
// RUN: not partita-opt %s --passes='fold-constants{size=3}' 2>&1 | FileCheck %s --check-prefix=OPT
// OPT: partita-opt: error: fold-constants: unknown option 'size'
// RUN: not partita-opt %s --passes='fold-constants,nosuchpass' 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// UNKNOWN: partita-opt: error: unknown pass 'nosuchpass' (see --list-passes)

// CHECK-LABEL: graph @mask() opset 17 {
// CHECK: %m = LessOrEqual(%col, %row) : bool[3,3]
graph @mask() opset 17 {
  %r = Constant() {value = dense<i64[3]>[0, 1, 2]} : i64[3]
  %a0 = Constant() {value = dense<i64[1]>[0]} : i64[1]
  %a1 = Constant() {value = dense<i64[1]>[1]} : i64[1]
  %row = Unsqueeze(%r, %a1) : i64[3,1]
  %col = Unsqueeze(%r, %a0) : i64[1,3]
  %m = LessOrEqual(%col, %row) : bool[3,3]
  return %m
}
