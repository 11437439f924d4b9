func.func @mlp(%x: tensor<8x16xf32>, %w: tensor<16x32xf32>, %b: tensor<32xf32>) -> tensor<8x32xf32> {
  %0 = kiln_graph.matmul %x, %w : tensor<8x16xf32>, tensor<16x32xf32> -> tensor<8x32xf32>
  %1 = kiln_graph.add %0, %b : tensor<8x32xf32>, tensor<32xf32> -> tensor<8x32xf32>
  %2 = kiln_graph.relu %1 : tensor<8x32xf32> -> tensor<8x32xf32>
  %3 = kiln_graph.softmax %2 {dim = 1 : i64} : tensor<8x32xf32> -> tensor<8x32xf32>
  return %3 : tensor<8x32xf32>
}
