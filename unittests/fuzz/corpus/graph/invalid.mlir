func.func @g(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = kiln_graph.add %x, %x : tensor<4xf32>, tensor<4xf32> -> tensor<5xf32>
  return %0 : tensor<5xf32>
}
