// RUN: not partita-opt %s --passes='autodiff,data-parallel' 2>&1 | FileCheck %s

// A mean over the batch: its gradient divides by a count autodiff fixed for
// one replica's batch, which would be dp times too large once dp replicas'
// batches are one global batch. Refused, naming the node (add-loss writes
// the mean as a sum over a count computed in the graph instead).
// CHECK: data-parallel: node '%loss' (ReduceMean) averages over the batch, which dp splits: its gradient's 1/count was fixed for one replica's batch
graph @g(%x: f32[2,4]) opset 17 mesh<dp=2, tp=1> {
  %w = Weight() {name = "w"} : f32[4]
  %y = Mul(%x, %w) : f32[2,4]
  %loss = ReduceMean(%y) {keepdims = 0} : f32[]
  return %loss
}
