// RUN: kiln-opt %s --pass-pipeline='builtin.module(func.func(kiln-lower-sort))' -verify-diagnostics

func.func @on_tensors(%x: tensor<4xf32>, %v: tensor<4xf32>, %i: tensor<4xi64>) -> tensor<4xi64> {
  // expected-error @+1 {{must be bufferized before kiln-lower-sort}}
  %0:2 = kiln_kernel.sort %x into %v, %i {dim = 0 : i64} : tensor<4xf32> into tensor<4xf32>, tensor<4xi64> -> tensor<4xf32>, tensor<4xi64>
  return %0#1 : tensor<4xi64>
}
