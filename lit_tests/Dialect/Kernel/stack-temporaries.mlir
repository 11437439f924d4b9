// RUN: kiln-opt %s -split-input-file -pass-pipeline='builtin.module(func.func(kiln-stack-temporaries{max-bytes=1024}))' | FileCheck %s

// Static temporaries of the entry block go on the stack while they fit the
// budget (256 + 512 bytes of 1024); the next one (512) does not fit, a
// dynamically sized one and one inside a loop stay on the heap.
// CHECK-LABEL: func.func private @kernel
// CHECK: memref.alloca() {alignment = 64 : i64} : memref<64xf32>
// CHECK: memref.alloca() : memref<64xf64>
// CHECK: memref.alloc() : memref<128xf32>
// CHECK: memref.alloc(%{{.*}}) : memref<?xf32>
// CHECK: scf.for
// CHECK:   memref.alloc() : memref<4xf32>
func.func private @kernel(%id: index, %count: index, %n: index) attributes {kiln_kernel.kernel = "kernel"} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %a = memref.alloc() {alignment = 64 : i64} : memref<64xf32>
  %b = memref.alloc() : memref<64xf64>
  %c = memref.alloc() : memref<128xf32>
  %d = memref.alloc(%n) : memref<?xf32>
  scf.for %i = %c0 to %n step %c1 {
    %e = memref.alloc() : memref<4xf32>
  }
  return
}

// -----

// Functions that are not kernels are left alone.
// CHECK-LABEL: func.func @host
// CHECK: memref.alloc() : memref<4xf32>
func.func @host() -> memref<4xf32> {
  %a = memref.alloc() : memref<4xf32>
  return %a : memref<4xf32>
}
