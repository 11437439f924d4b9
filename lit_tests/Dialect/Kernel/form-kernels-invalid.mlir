// RUN: kiln-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(kiln-form-kernels))' -verify-diagnostics

// expected-error @+1 {{kiln-form-kernels expects a single-block function}}
func.func @branches(%x: tensor<8xf32>) -> tensor<8xf32> {
  cf.br ^bb1
^bb1:
  %0 = kiln_graph.exp %x : tensor<8xf32> -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

func.func private @opaque(tensor<8xf32>) -> tensor<8xf32>

// Kernels are emitted at the end of the block, where they could not feed an
// op of another dialect.
func.func @call_in_graph(%x: tensor<8xf32>) -> tensor<8xf32> {
  %0 = kiln_graph.exp %x : tensor<8xf32> -> tensor<8xf32>
  // expected-error @+1 {{'func.call' op is not a kiln_graph op; kiln-form-kernels expects graph functions of kiln_graph ops only}}
  %1 = func.call @opaque(%0) : (tensor<8xf32>) -> tensor<8xf32>
  %2 = kiln_graph.neg %1 : tensor<8xf32> -> tensor<8xf32>
  return %2 : tensor<8xf32>
}
