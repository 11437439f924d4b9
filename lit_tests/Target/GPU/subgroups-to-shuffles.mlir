// RUN: kiln-opt %s -split-input-file -verify-diagnostics \
// RUN:   --pass-pipeline='builtin.module(gpu.module(kiln-gpu-subgroups-to-shuffles{subgroup-size=32}))' | FileCheck %s

// A subgroup reduction of 32 lanes: a butterfly of 5 xor shuffles, every
// lane ending with the result; the subgroup id from the thread id, the
// subgroup count from the block's size, the size a constant.
// CHECK-LABEL: gpu.func @reduce
// CHECK-COUNT-5: gpu.shuffle xor
// CHECK-NOT: gpu.shuffle
// CHECK-NOT: gpu.subgroup_reduce
// CHECK-NOT: gpu.subgroup_id
// CHECK: gpu.block_dim x
// CHECK: arith.ceildivui
// CHECK-NOT: gpu.num_subgroups
// CHECK-NOT: gpu.subgroup_size
// CHECK: gpu.return
gpu.module @m {
  gpu.func @reduce(%out: memref<128xf32>, %ids: memref<3xindex>) kernel attributes {known_block_size = array<i32: 128, 1, 1>} {
    %t = gpu.thread_id x
    %i = arith.index_cast %t : index to i32
    %x = arith.sitofp %i : i32 to f32
    %sum = gpu.subgroup_reduce add %x : (f32) -> f32
    memref.store %sum, %out[%t] : memref<128xf32>
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %sg = gpu.subgroup_id : index
    %n = gpu.num_subgroups : index
    %size = gpu.subgroup_size : index
    memref.store %sg, %ids[%c0] : memref<3xindex>
    memref.store %n, %ids[%c1] : memref<3xindex>
    memref.store %size, %ids[%c2] : memref<3xindex>
    gpu.return
  }
}

// -----

// 64-bit lanes have no 32-bit shuffles (the mapping never asks for them).
gpu.module @wide {
  gpu.func @reduce_f64(%out: memref<128xf64>) kernel {
    %t = gpu.thread_id x
    %i = arith.index_cast %t : index to i32
    %x = arith.sitofp %i : i32 to f64
    // expected-error @+1 {{has no lowering to shuffles here}}
    %sum = gpu.subgroup_reduce add %x : (f64) -> f64
    memref.store %sum, %out[%t] : memref<128xf64>
    gpu.return
  }
}
