// RUN: kiln-opt %s -split-input-file --pass-pipeline='builtin.module(kiln-gpu-form-kernel-modules)' | FileCheck %s
// RUN: kiln-opt %s -split-input-file --pass-pipeline='builtin.module(kiln-gpu-form-kernel-modules,nvvm-attach-target{chip=sm_90 features=+ptx80 O=3},gpu.module(lower-affine,convert-scf-to-cf,convert-gpu-to-nvvm{use-bare-ptr-memref-call-conv=1},canonicalize,cse),reconcile-unrealized-casts)' \
// RUN:   | FileCheck %s --check-prefix=NVVM

// A mapped kernel (as kiln-gpu-map-workgroups leaves it) becomes the one
// gpu.func of its gpu.module: its bindings as they are, then the size
// symbol as i64; its block size the mapping's.
// CHECK: module attributes {gpu.container_module}
// CHECK: gpu.module @k
// CHECK: gpu.func @k(%[[IN:.*]]: memref<64xf32>, %[[OUT:.*]]: memref<64xf32>, %[[N:.*]]: i64) kernel
// CHECK-SAME: known_block_size = array<i32: 128, 1, 1>
// CHECK: %[[SIZE:.*]] = arith.index_cast %[[N]] : i64 to index
// CHECK: scf.for %{{.*}} = %{{.*}} to %[[SIZE]]
// CHECK: memref.load %[[IN]]
// CHECK: gpu.return
// CHECK-NOT: func.func

// With the bare-pointer convention, one pointer per binding, then the
// symbol; the block size is NVVM's maxntid.
// NVVM: llvm.func @k(%{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: i64)
// NVVM-SAME: nvvm.kernel
// NVVM-SAME: nvvm.maxntid = array<i32: 128, 1, 1>
// NVVM: nvvm.read.ptx.sreg.tid.x
func.func @k(%id: index, %count: index, %in: memref<64xf32>, %out: memref<64xf32>, %n: index)
    attributes {kiln_kernel.kernel = "k", kiln_kernel.num_symbols = 1 : i64,
                kiln_kernel.workgroup_size = array<i64: 128, 1, 1>} {
  %t = gpu.thread_id x
  %c128 = arith.constant 128 : index
  scf.for %i = %t to %n step %c128 {
    %x = memref.load %in[%i] : memref<64xf32>
    %y = arith.mulf %x, %x : f32
    memref.store %y, %out[%i] : memref<64xf32>
  }
  return
}

// -----

// Workgroup memory becomes the kernel's workgroup attribution (shared
// memory, NVVM's address space 3); a constant it reads is copied into its
// module.
// CHECK-LABEL: gpu.module @shared
// CHECK: gpu.func @shared(%{{.*}}: memref<4xf32>) workgroup(%[[SHARED:.*]] : memref<4xf32, #gpu.address_space<workgroup>>) kernel
// CHECK-NOT: memref.alloc
// CHECK: memref.store %{{.*}}, %[[SHARED]]
// CHECK: gpu.barrier
// CHECK: memref.global "private" constant @table : memref<4xf32> = dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]>
// NVVM-LABEL: gpu.module @shared
// NVVM: llvm.mlir.global internal @__wg_shared_0() {addr_space = 3 : i32} : !llvm.array<4 x f32>
// NVVM: llvm.func @shared(%{{.*}}: !llvm.ptr)
// NVVM: llvm.mlir.global private constant @table
memref.global "private" constant @table : memref<4xf32> = dense<[1.0, 2.0, 3.0, 4.0]>
func.func @shared(%id: index, %count: index, %out: memref<4xf32>)
    attributes {kiln_kernel.kernel = "shared", kiln_kernel.workgroup_size = array<i64: 4, 1, 1>} {
  %buffer = memref.alloc() : memref<4xf32, #gpu.address_space<workgroup>>
  %t = gpu.thread_id x
  %g = memref.get_global @table : memref<4xf32>
  %v = memref.load %g[%t] : memref<4xf32>
  memref.store %v, %buffer[%t] : memref<4xf32, #gpu.address_space<workgroup>>
  gpu.barrier
  %c3 = arith.constant 3 : index
  %r = arith.subi %c3, %t : index
  %w = memref.load %buffer[%r] : memref<4xf32, #gpu.address_space<workgroup>>
  memref.store %w, %out[%t] : memref<4xf32>
  return
}
