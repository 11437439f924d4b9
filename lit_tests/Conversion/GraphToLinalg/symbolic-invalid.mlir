// RUN: kiln-opt %s -split-input-file -convert-kiln-graph-to-linalg -verify-diagnostics

// Ops whose lowerings still need static shapes say so at the op.
#s0 = affine_map<()[s0] -> (s0)>
#i0 = affine_map<()[s0] -> (s0)>
func.func @scatter(%x: tensor<?x4xf32, #s0>, %i: tensor<?x4xi64, #i0>, %s0: index) -> tensor<?x4xf32, #s0>
    attributes {kiln_kernel.num_symbols = 1 : i64} {
  // expected-error @+1 {{does not support symbolic sizes yet}}
  %0 = kiln_graph.scatter %x[%i], %x {dim = 0 : i64} : tensor<?x4xf32, #s0>, tensor<?x4xi64, #i0>, tensor<?x4xf32, #s0> -> tensor<?x4xf32, #s0>
  return %0 : tensor<?x4xf32, #s0>
}
