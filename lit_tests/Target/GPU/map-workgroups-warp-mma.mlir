// Matmuls of half operands on tensor cores: each warp's 32 x 32 outputs by
// mma m16n8k16 (NVVM's mma.sync, or its emulation through workgroup memory
// for any GPU); float32 products keep the threads' tiles.
// RUN: kiln-opt %s -split-input-file \
// RUN:   --pass-pipeline='builtin.module(kiln-attach-target{target=cuda:sm_90},func.func(kiln-gpu-map-workgroups{subgroups=false warp-mma=nvvm}))' | FileCheck %s --check-prefixes=CHECK,NVVM
// RUN: kiln-opt %s -split-input-file \
// RUN:   --pass-pipeline='builtin.module(kiln-attach-target{target=vulkan},func.func(kiln-gpu-map-workgroups{warp-mma=emulated}))' | FileCheck %s --check-prefixes=CHECK,EMULATED
// RUN: not kiln-opt %s -split-input-file \
// RUN:   --pass-pipeline='builtin.module(kiln-attach-target{target=vulkan},func.func(kiln-gpu-map-workgroups{warp-mma=wmma}))' 2>&1 | FileCheck %s --check-prefix=INVALID

// 256 threads (CUDA): 8 warps, 4 down and 2 across, a 128 x 64 tile; 128
// on Vulkan: 64 x 64. The tiles are loaded with zeros past the ends, every
// k of a step being multiplied.
// CHECK-LABEL: func.func @bf16_matmul
// NVVM-SAME: matmul tiles 128x64x32 on tensor cores (mma m16n8k16 per warp)
// EMULATED-SAME: matmul tiles 64x64x32 on tensor cores (mma m16n8k16 per warp, emulated)
// NVVM: memref.alloc() : memref<4096xbf16, #gpu.address_space<workgroup>>
// NVVM: memref.alloc() : memref<2048xbf16, #gpu.address_space<workgroup>>
// EMULATED-DAG: memref.alloc() : memref<1024xf32, #gpu.address_space<workgroup>>
// EMULATED-DAG: memref.alloc() : memref<512xf32, #gpu.address_space<workgroup>>
// CHECK: scf.if
// CHECK: } else {
// CHECK:   memref.store %{{.*}} : memref<{{[0-9]+}}xbf16, #gpu.address_space<workgroup>>
// A loop of two mma steps per stage, 2 x 4 tiles of 16 x 8 per warp each.
// CHECK: scf.for %{{.*}} = %c0{{.*}} to %c32{{.*}} step %c16{{.*}} iter_args
// Fragments: two halves per 32-bit register, the first in the low half.
// CHECK: arith.bitcast %{{.*}} : bf16 to i16
// CHECK: arith.shli
// CHECK: arith.ori
// NVVM-COUNT-8: nvvm.mma.sync A[{{.*}}] B[{{.*}}] C[{{.*}}] {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, multiplicandAPtxType = #nvvm.mma_type<bf16>, multiplicandBPtxType = #nvvm.mma_type<bf16>, shape = #nvvm.shape<m = 16, n = 8, k = 16>} : (i32, i32, f32) -> !llvm.struct<(f32, f32, f32, f32)>
// NVVM-NOT: nvvm.mma.sync
// EMULATED-NOT: nvvm.mma.sync
// EMULATED: gpu.barrier
// CHECK: gpu.barrier
func.func @bf16_matmul(%id: index, %count: index, %a: memref<200x96xbf16>, %b: memref<96x136xbf16>, %c: memref<200x136xf32>)
    attributes {kiln_kernel.kernel = "bf16_matmul", kiln_kernel.workgroup_extent = 200 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c96 = arith.constant 96 : index
  %c136 = arith.constant 136 : index
  %c200 = arith.constant 200 : index
  scf.parallel (%i, %j) = (%c0, %c0) to (%c200, %c136) step (%c1, %c1) {
    scf.for %k = %c0 to %c96 step %c1 {
      %x = memref.load %a[%i, %k] : memref<200x96xbf16>
      %y = memref.load %b[%k, %j] : memref<96x136xbf16>
      %acc = memref.load %c[%i, %j] : memref<200x136xf32>
      %xf = arith.extf %x : bf16 to f32
      %yf = arith.extf %y : bf16 to f32
      %p = arith.mulf %xf, %yf : f32
      %s = arith.addf %acc, %p fastmath<reassoc> : f32
      memref.store %s, %c[%i, %j] : memref<200x136xf32>
    }
    scf.reduce
  }
  return
}

// -----

// A float32 matmul, and a half one whose body does more than multiply and
// add, keep the threads' tiles.
// CHECK-LABEL: func.func @f32_matmul
// CHECK-SAME: through workgroup memory
// CHECK-NOT: nvvm.mma.sync
func.func @f32_matmul(%id: index, %count: index, %a: memref<128x64xf32>, %b: memref<64x128xf32>, %c: memref<128x128xf32>)
    attributes {kiln_kernel.kernel = "f32_matmul", kiln_kernel.workgroup_extent = 128 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  scf.parallel (%i, %j) = (%c0, %c0) to (%c128, %c128) step (%c1, %c1) {
    scf.for %k = %c0 to %c64 step %c1 {
      %x = memref.load %a[%i, %k] : memref<128x64xf32>
      %y = memref.load %b[%k, %j] : memref<64x128xf32>
      %acc = memref.load %c[%i, %j] : memref<128x128xf32>
      %p = arith.mulf %x, %y : f32
      %s = arith.addf %acc, %p fastmath<reassoc> : f32
      memref.store %s, %c[%i, %j] : memref<128x128xf32>
    }
    scf.reduce
  }
  return
}

// CHECK-LABEL: func.func @f16_abs_product
// CHECK-SAME: through workgroup memory
// CHECK-NOT: nvvm.mma.sync
func.func @f16_abs_product(%id: index, %count: index, %a: memref<128x64xf16>, %b: memref<64x128xf16>, %c: memref<128x128xf32>)
    attributes {kiln_kernel.kernel = "f16_abs_product", kiln_kernel.workgroup_extent = 128 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  scf.parallel (%i, %j) = (%c0, %c0) to (%c128, %c128) step (%c1, %c1) {
    scf.for %k = %c0 to %c64 step %c1 {
      %x = memref.load %a[%i, %k] : memref<128x64xf16>
      %y = memref.load %b[%k, %j] : memref<64x128xf16>
      %acc = memref.load %c[%i, %j] : memref<128x128xf32>
      %xf = arith.extf %x : f16 to f32
      %yf = arith.extf %y : f16 to f32
      %p = arith.mulf %xf, %yf : f32
      %q = math.absf %p : f32
      %s = arith.addf %acc, %q fastmath<reassoc> : f32
      memref.store %s, %c[%i, %j] : memref<128x128xf32>
    }
    scf.reduce
  }
  return
}

// INVALID: warp-mma must be none, nvvm or emulated, not 'wmma'
