graph @g(%x: f32[4]) opset 17 {
  %y = Relu(%x) {axis = 99999999999999999999} : f32[4]
  return %y
}
