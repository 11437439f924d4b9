// RUN: kiln-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(kiln-gpu-prepare-kernels))' -verify-diagnostics

func.func @alloc_in_loop(%id: index, %count: index, %out: memref<4xf32>)
    attributes {kiln_kernel.kernel = "alloc_in_loop"} {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %c4 step %c1 {
    // expected-error @+1 {{a GPU kernel cannot allocate memory inside a loop or branch}}
    %t = memref.alloc() : memref<4xf32>
  }
  return
}

// -----

func.func @unknown_size(%id: index, %count: index, %out: memref<1xf32>, %n: index)
    attributes {kiln_kernel.kernel = "unknown_size", kiln_kernel.num_symbols = 1 : i64} {
  %m = arith.maxsi %n, %id : index
  // expected-error @+1 {{has a size the GPU target cannot express over the size symbols}}
  %t = memref.alloc(%m) : memref<?xf32>
  return
}
