// RUN: kiln-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(kiln-form-kernels))' -verify-diagnostics

// expected-error @+1 {{kiln-form-kernels expects a single-block function}}
func.func @branches(%x: tensor<8xf32>) -> tensor<8xf32> {
  cf.br ^bb1
^bb1:
  %0 = kiln_graph.exp %x : tensor<8xf32> -> tensor<8xf32>
  return %0 : tensor<8xf32>
}
