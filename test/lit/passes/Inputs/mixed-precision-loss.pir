// A scalar loss of one projection: its backward under mixed precision (mixed-precision.pir).
graph @loss(%x: f32[2,8]) opset 17 {
  %w = Weight() {name = "fc.w"} : f32[8,4]
  %h = MatMul(%x, %w) : f32[2,4]
  %l = ReduceSum(%h) {keepdims = 0} : f32[]
  return %l
}
