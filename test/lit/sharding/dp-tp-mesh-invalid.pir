// RUN: not partita-opt %s --passes='propagate-sharding{axis=pp}' 2>&1 | FileCheck %s --check-prefix=PROP
// RUN: not partita-opt %s --passes='localize{coords=dp:1}' 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: not partita-opt %s --passes='localize{coords=dp:2,tp:0}' 2>&1 | FileCheck %s --check-prefix=OUTSIDE
// RUN: not partita-opt %s --passes='localize{coords=dp:0,pp:0}' 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: not partita-opt %s --passes='localize{coords=dp=1}' 2>&1 | FileCheck %s --check-prefix=SYNTAX
// PROP: error: propagate-sharding: axis 'pp' is not in mesh<dp=2, tp=2>
// MISSING: error: localize: coords: no coordinate for axis 'tp' of mesh<dp=2, tp=2>
// OUTSIDE: error: localize: coords: dp:2 is outside mesh<dp=2, tp=2>
// UNKNOWN: error: localize: coords: axis 'pp' is not in mesh<dp=2, tp=2>
// SYNTAX: error: localize: option coords expects a comma-separated list of axis:coordinate pairs (dp:1,tp:0), got 'dp=1'
graph @g(%x: f32[4,8] {S(dp),R}) opset 17 mesh<dp=2, tp=2> {
  %y = Relu(%x) : f32[4,8]
  return %y
}
