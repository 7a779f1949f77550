graph @g(%x: f32[8]) opset 17 {
  %w = Weight() {name = "w"} : f32[8]
  %y = Mul(%x, %w) : f32[8]
  return %y
}
