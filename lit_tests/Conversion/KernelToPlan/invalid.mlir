// RUN: kiln-opt %s -split-input-file -kiln-outline-kernels -verify-diagnostics

func.func @unfused_op(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{cannot be placed in a host plan: fuse it into a kernel first}}
  %0 = kiln_graph.exp %x : tensor<8xf32> -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

// expected-error @+1 {{expects a single-block graph function}}
func.func @branches(%x: tensor<8xf32>) -> tensor<8xf32> {
  cf.br ^bb1
^bb1:
  return %x : tensor<8xf32>
}
