// exp on float64: the Vulkan target has no instruction for it, so its
// SPIR-V stage fails.
func.func @exp64(%x: tensor<8xf64>) -> tensor<8xf64> {
  %0 = kiln_graph.exp %x : tensor<8xf64> -> tensor<8xf64>
  return %0 : tensor<8xf64>
}
